"""One target under atheris (libFuzzer), coverage-guided over the
package's code, with :mod:`fuzz.mutations`' structured mutations mixed
into libFuzzer's.

::

    python -m fuzz.run_target archive [--workspace=DIR] CORPUS_DIR SEED_DIR \
        -runs=10000

The arguments after the target's name are libFuzzer's (corpus folders,
``-runs``, ``-max_total_time``, ``-timeout``, ``-merge=1``...), after an
optional ``--workspace=DIR``: the folder each input's files are written
to, which the caller removes after the run (libFuzzer ends the process
without Python's clean-up). Without it, a new folder in memory
(``/dev/shm``) is left behind. An input
that breaks a property of :mod:`fuzz.harness` stops the run with the
property named, and libFuzzer writes it to ``-artifact_prefix``.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile

import atheris

#: share of inputs made by a structured mutation, not libFuzzer's
STRUCTURED = 0.3


class PropertyBroken(Exception):
    """An input broke a property (the message says which)."""


def main(argv=None) -> None:
    argv = sys.argv if argv is None else argv
    name, argv = argv[1], [argv[0]] + argv[2:]
    from fuzz.harness import (
        Workspace, check, run_quietly, scratch_root, warm_up)
    from fuzz.targets import target as target_named

    if argv[1:2] and argv[1].startswith("--workspace="):
        root = argv.pop(1)[len("--workspace="):]
        os.makedirs(root, exist_ok=True)
    else:
        root = tempfile.mkdtemp(prefix="bilm_keras_fuzz_", dir=scratch_root())
    run_quietly()
    # the package's modules (and a target's own module, for one named
    # module:attribute) are instrumented as they are first imported
    modules = ["bilm_keras"] + ([name.split(":")[0]] if ":" in name else [])
    workspace = Workspace(root)
    with atheris.instrument_imports(include=modules):
        import bilm_keras.options  # noqa: F401
        target = target_named(name)
        warm_up(target, workspace)

    def test_one_input(data: bytes) -> None:
        finding = check(target, data, workspace, alarm=False)
        if finding is not None:
            raise PropertyBroken(f"{name}: {finding}")

    def mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if rng.random() < STRUCTURED:
            try:
                out = target.mutate(data, rng)
            except Exception:  # noqa: BLE001 -- libFuzzer's mutation then
                out = data
            if out != data and len(out) <= max_size:
                return out
        return atheris.Mutate(data, max_size)

    atheris.Setup(argv, test_one_input,
                  custom_mutator=mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
