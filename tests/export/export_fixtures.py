"""One export of the fixture model, shared by the export test modules.

A fixture imported into several modules is set up once per module, so the
export itself is memoised here (one per test session/process).
"""

import pathlib

import pytest

from bilm_keras.export.hub_module import export_hub

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
_EXPORTS = {}


@pytest.fixture(scope="session")
def fixture_export(model_dir, tmp_path_factory):
    """The bilm-tf fixture model exported (with its vocabulary) into an
    existing empty directory; returns that directory."""
    if "fixture" not in _EXPORTS:
        outdir = tmp_path_factory.mktemp("hub_shared") / "elmo"
        outdir.mkdir()
        _EXPORTS["fixture"] = export_hub(
            options_file=str(model_dir / "options.json"),
            weight_file=str(model_dir / "lm_weights.hdf5"),
            vocab_file=str(model_dir / "vocab_test.txt"),
            outdir=outdir,
        )
    return _EXPORTS["fixture"]
