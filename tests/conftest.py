"""Shared pytest configuration: the fixtures with set-up, the tiers.

The bilm-tf fixtures are found through one setting, the environment variable
``BILM_FIXTURES`` (default ``tests/fixtures/bilm-tf``; the ELMoForManyLangs one
``MANYLANGS_FIXTURES``, default ``tests/fixtures/elmoformanylangs``). When they
are missing, tests that need them skip on a developer's machine and *fail* when
``CI=true``, so CI can never go green without checking against the reference
numbers.

Three tiers: ``pytest -m "not slow"`` is the quick loop; ``pytest`` (the
README's test command) adds the tests marked ``slow``; ``pytest -m nightly``
runs the tests marked ``nightly``, long end-to-end runs whose paths the
other two tiers cover (fresh-process reloads, several workers or
devices, the examples, the longest documents), and ``tests/bench/``'s
runs of the benchmark scripts. ``pytest`` leaves the nightly ones out
unless its command line names their file or test; CI runs them as a
second command (``.ci/run``).

Plain helpers are in ``helpers.py`` (``from helpers import
run_layer_test``); fixtures here. A test that needs an optional extra
(torch, to compare our ``.pkl`` reader with ``torch.load``) skips saying
which when it is missing, and fails when ``CI=true``
(``helpers.require_extra``).
"""

import json
import logging
import os
import pathlib
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# bytecode caches even where the environment turns them off
# (PYTHONDONTWRITEBYTECODE=1, as in many containers): the test modules'
# rewritten asserts are then compiled once, not by each worker on each
# run, and the suite's ~170 child interpreters read bilm_keras's compiled
# modules instead of compiling them each (0.25 s each)
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# the CPU class's TensorFlow settings before any test imports TensorFlow
# (bilm_keras._utils.cpu_settings): the tests and their children run as
# a user's program does
import bilm_keras  # noqa: E402,F401
import helpers  # noqa: E402
import pytest  # noqa: E402
from helpers import (  # noqa: E402
    REPO_ROOT,
    fixture_options,
    fixtures_root,
    manylangs_fixtures_root,
    paddle_baike_fixtures_root,
    skip_or_fail,
)


@pytest.fixture(autouse=True)
def library_records_reach_caplog():
    """The package logger does not propagate to the root logger
    (``bilm_keras._utils.console_log``: a root handler would print every
    line twice); pytest's ``caplog`` listens there, so in a test it does
    (pytest's root handlers capture, they print nothing)."""
    logger = logging.getLogger("bilm_keras")
    before = logger.propagate
    logger.propagate = True
    yield
    logger.propagate = before


@pytest.fixture(scope="session")
def bilm_fixtures() -> pathlib.Path:
    root = fixtures_root()
    if not (root / "model" / "lm_weights.hdf5").exists():
        skip_or_fail(f"bilm-tf fixtures not found at {root} "
                     "(set BILM_FIXTURES to their folder)")
    return root


@pytest.fixture(scope="session")
def manylangs_fixtures() -> pathlib.Path:
    root = manylangs_fixtures_root()
    if not (root / "reference.hdf5").exists():
        skip_or_fail(f"ELMoForManyLangs fixtures not found at {root} "
                     "(set MANYLANGS_FIXTURES to their folder)")
    return root


@pytest.fixture(scope="session")
def manylangs_converted(manylangs_fixtures, tmp_path_factory) -> dict:
    """The fixture's ``tiny.model`` as it is, converted once per session
    (``convert_manylangs``'s result: ``options_file``, ``weight_file``, ...).
    Read-only: a test that changes the files converts its own."""
    from bilm_keras import convert_manylangs

    out = tmp_path_factory.mktemp("manylangs") / "converted"
    return convert_manylangs(manylangs_fixtures / "tiny.model", out)


@pytest.fixture(scope="session")
def manylangs_reference(manylangs_fixtures) -> dict:
    """Upstream's outputs for the fixture sentences (``reference.hdf5``):
    ``sentences``; per sentence ``all`` `(3, n, 2P)`, ``average`` `(n, 2P)`,
    ``carryover`` `(3, n, 2P)` and ``ids`` `(n + 2, MC + 1)`, upstream's raw
    char ids with the word id as the last column."""
    import h5py
    import numpy as np

    sentences = json.loads(
        (manylangs_fixtures / "sentences.json").read_text("utf-8"))
    with h5py.File(manylangs_fixtures / "reference.hdf5", "r") as f:
        n = len(sentences)
        return dict(
            sentences=sentences,
            all=[f[str(i)][...] for i in range(n)],
            average=[f[f"average/{i}"][...] for i in range(n)],
            carryover=[f[f"carryover/{i}"][...] for i in range(n)],
            ids=[np.concatenate([f[f"char_ids/{i}"][...],
                                 f[f"word_ids/{i}"][...][:, None]], axis=1)
                 for i in range(n)],
        )


@pytest.fixture(scope="session")
def paddle_baike_fixtures() -> pathlib.Path:
    """The Fluid (baike) ELMo fixtures Paddle 1.8.5 made
    (tests/fixtures/paddle_baike/README.md)."""
    return paddle_baike_fixtures_root()


@pytest.fixture(scope="session")
def paddle_baike_converted(paddle_baike_fixtures, tmp_path_factory) -> dict:
    """The fixture's Fluid checkpoint converted once per session
    (``convert_paddle``'s result: outdir, options, weight and vocab
    files)."""
    from bilm_keras.weights.paddle_conversion import convert_paddle

    out = tmp_path_factory.mktemp("paddle_baike") / "baike-elmo"
    return convert_paddle(paddle_baike_fixtures / "checkpoint", out,
                          vocab_file=paddle_baike_fixtures / "vocab.txt")


@pytest.fixture(scope="session")
def model_dir(bilm_fixtures) -> pathlib.Path:
    """``options.json``, ``lm_weights.hdf5``, ``vocab_test.txt`` and the
    reference embeddings ``lm_embeddings_{0,1,2}.hdf5``."""
    return bilm_fixtures / "model"


@pytest.fixture(scope="session")
def train_dir(bilm_fixtures) -> pathlib.Path:
    """The tiny training corpus ``data.txt`` and its ``vocab.txt``."""
    return bilm_fixtures / "train"


@pytest.fixture(scope="session")
def fixture_bilm(model_dir):
    """bilm-tf's fixture model as a stateless ``BidirectionalLanguageModel``
    (``options.json`` + ``lm_weights.hdf5``), one for the session: each
    model traces its graphs on first use (~0.5 CPU s with their first
    run), so the modules that only call it share one. Stateless, so no
    test sees another's calls; a test that needs its own settings
    (stateful, other files) builds its own."""
    from bilm_keras import BidirectionalLanguageModel

    return BidirectionalLanguageModel(str(model_dir / "options.json"),
                                      str(model_dir / "lm_weights.hdf5"))


@pytest.fixture(scope="session")
def fixture_export(model_dir, tmp_path_factory) -> str:
    """The bilm-tf fixture model exported (with its vocabulary) into an
    existing empty directory, once per session; returns that directory."""
    from bilm_keras.export.saved_model_export import export_hub

    outdir = tmp_path_factory.mktemp("hub_shared") / "elmo"
    outdir.mkdir()
    return export_hub(
        options_file=str(model_dir / "options.json"),
        weight_file=str(model_dir / "lm_weights.hdf5"),
        vocab_file=str(model_dir / "vocab_test.txt"),
        outdir=outdir,
    )


@pytest.fixture(scope="session")
def short_char_run(train_dir, tmp_path_factory):
    """``(save_dir, result)``: a bidirectional char-CNN biLM with clips and
    skip connections, trained one epoch (6 steps of 2 x 10 tokens, dropout
    0.1, seed 3) on the fixture corpus. Training is mostly tracing its
    step (~3 CPU s), so the quick tests that only read a short run's
    save_dir share this one (test_save_dir_models,
    test_evaluate_vs_numpy); none of them writes into it."""
    from bilm_keras.training import TrainingRun, train

    lstm = {"dim": 16, "projection_dim": 8, "n_layers": 2,
            "use_skip_connections": True, "cell_clip": 3, "proj_clip": 3}
    options = fixture_options(use_chars=True, dropout=0.1, lstm=lstm,
                              n_epochs=1)
    save_dir = tmp_path_factory.mktemp("short_char_run") / "checkpoints"
    result = train(options, TrainingRun(
        train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), save_dir=str(save_dir),
        seed=3, log_every=1000))
    return save_dir, result


@pytest.fixture(scope="session")
def docstring_bilm(tmp_path_factory) -> pathlib.Path:
    """The model folder (``options.json``, ``lm_weights.hdf5``) of the
    README's demo, ``bilm-keras pipeline``'s tiny biLM trained on Python's
    docstrings, for the demo's own three epochs: the examples' tests learn
    their tasks on it (tests/fixtures/stdlib_context/). One epoch gave the
    classifier too thin a margin over its baseline (0.535 against 0.515
    in one fresh clone's run)."""
    from bilm_keras.training.pipeline import run_pipeline

    result = run_pipeline(out_dir=tmp_path_factory.mktemp("docstring_bilm"),
                          n_epochs=3)
    return pathlib.Path(result["options_file"]).parent


@pytest.fixture
def small_disk(tmp_path, record_property):
    """``small_disk(size)``: a :class:`full_disk.SmallDisk` of ``size``
    bytes under the test's folder: a real tmpfs where the test may mount
    one, else an ordinary folder (the test then injects ENOSPC at the
    writer's seam). Which one ran is recorded and printed."""
    from full_disk import SmallDisk

    disks = []

    def make(size: int, name: str = "disk") -> SmallDisk:
        disk = SmallDisk(tmp_path / name, size)
        disks.append(disk)
        record_property("full_disk", disk.mode)
        print(f"full disk: {disk.mode} ({disk.path})")
        return disk

    yield make
    for disk in disks:
        disk.close()


def pytest_sessionfinish(session):
    # the command servers of helpers.python_argv, if any was started
    if helpers._COMMAND_SERVERS is not None:
        helpers._COMMAND_SERVERS.stop()


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: a long check; CI still runs it, at a small size",
    )
    config.addinivalue_line(
        "markers",
        "nightly: a long end-to-end run whose paths the other tests cover; "
        "slow too, left out of `pytest` unless named, run by `pytest -m "
        "nightly` (CI's second command)",
    )


def _named_on_command_line(config, item) -> bool:
    """Whether the command line names ``item``'s file or the test itself
    (``pytest tests/x.py`` or ``pytest tests/x.py::test_y``), not only a
    folder it is in."""
    for arg in config.args:
        path, _, rest = str(arg).partition("::")
        target = pathlib.Path(config.invocation_params.dir, path).resolve()
        name = item.nodeid.split("::", 1)[1]
        if target == item.path and (
                not rest or name == rest
                or name.startswith((rest + "[", rest + "::"))):
            return True
    return False


@pytest.hookimpl(tryfirst=True)  # before -m deselects by mark
def pytest_collection_modifyitems(config, items):
    # tests/bench/ runs the bench/ scripts (each a process that imports
    # TensorFlow and times passes): slow as a folder, so the files stay as
    # the benchmarks' owners write them; a nightly test is slow too
    bench = REPO_ROOT / "tests" / "bench"
    for item in items:
        if (bench in item.path.parents
                or item.get_closest_marker("nightly") is not None):
            item.add_marker(pytest.mark.slow)
    # the nightly tier: left out unless -m names it or the command line
    # names the test or its file
    if "nightly" in (config.option.markexpr or ""):
        return
    kept, left_out = [], []
    for item in items:
        if (item.get_closest_marker("nightly") is None
                or _named_on_command_line(config, item)):
            kept.append(item)
        else:
            left_out.append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
