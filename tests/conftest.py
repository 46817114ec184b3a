"""Shared pytest configuration.

The bilm-tf fixtures are found through one setting, the environment variable
``BILM_FIXTURES`` (default ``../shared/fixtures/bilm-tf`` relative to the
repository root). When they are missing, tests that need them skip on a
developer's machine and *fail* when ``CI=true``, so CI can never go green
without checking against the reference numbers.
"""

import os
import pathlib

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def fixtures_root() -> pathlib.Path:
    """The bilm-tf fixture folder (``data/``, ``model/``, ``train/``)."""
    default = REPO_ROOT.parent / "shared" / "fixtures" / "bilm-tf"
    return pathlib.Path(os.environ.get("BILM_FIXTURES", default))


@pytest.fixture(scope="session")
def bilm_fixtures() -> pathlib.Path:
    root = fixtures_root()
    if not (root / "model" / "lm_weights.hdf5").exists():
        message = (
            f"bilm-tf fixtures not found at {root} "
            "(set BILM_FIXTURES to their folder)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return root


@pytest.fixture(scope="session")
def model_dir(bilm_fixtures) -> pathlib.Path:
    """``options.json``, ``lm_weights.hdf5``, ``vocab_test.txt`` and the
    reference embeddings ``lm_embeddings_{0,1,2}.hdf5``."""
    return bilm_fixtures / "model"


@pytest.fixture(scope="session")
def train_dir(bilm_fixtures) -> pathlib.Path:
    """The tiny training corpus ``data.txt`` and its ``vocab.txt``."""
    return bilm_fixtures / "train"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: a long check; CI still runs it, at a small size",
    )
