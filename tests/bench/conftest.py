"""Set-up the bench scripts' smoke tests share.

A test that runs a script end to end (``--quick``) is marked ``nightly``:
it proves the script still runs, and the package's paths it calls are
tested in the default run; ``pytest -m nightly`` runs it (CI's second
command). The scripts' own functions and their one-line refusals stay in
the default run."""

import pytest


@pytest.fixture(scope="session")
def quick_bench_workdir(tmp_path_factory):
    """One ``--workdir`` for the embedding benches' ``--quick`` runs
    (``embed_throughput.py``, ``embed_precision.py``): the first run writes
    the quick model's ``options.json`` and ``weights.hdf5`` there (a child
    process, through the real saver), the others load it as it is (the
    benches only read a workdir's model: ``common.write_bench_model``
    writes one only where none is). One model-writing process per session
    instead of one per run."""
    return tmp_path_factory.mktemp("quick_bench_model")
