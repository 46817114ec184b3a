"""Readers with a planted flaw, one per property of ``fuzz/harness.py``:
the suite runs the harness on them to prove that each check can fail."""

import os
import pickle
import time

from fuzz.harness import ABSOLUTE_CANARY
from fuzz.targets import Target


class PlantedError(ValueError):
    """The planted readers' documented error."""


def _read(inputs) -> bytes:
    with open(os.path.join(inputs, "input.bin"), "rb") as f:
        return f.read()


def _unsafe_pickle(inputs, out):
    # what a reader without a restricted unpickler does
    with open(os.path.join(inputs, "input.bin"), "rb") as f:
        pickle.load(f)


def _flawed(inputs, out):
    data = _read(inputs)
    if data.startswith(b"undocumented"):
        raise KeyError("not a documented error")
    if data.startswith(b"two lines"):
        raise PlantedError("first line\nsecond line")
    if data.startswith(b"allocate"):
        bytearray(4 << 30)  # 4 GiB for a few bytes
    if data.startswith(b"hang"):
        time.sleep(30)
    if data.startswith(b"escape"):
        with open(os.path.join(out, "..", "escaped"), "wb") as f:
            f.write(data)
    if data.startswith(b"absolute"):
        os.makedirs(ABSOLUTE_CANARY, exist_ok=True)
    if data.startswith(b"overwrite"):
        with open(os.path.join(inputs, "input.bin"), "ab") as f:
            f.write(b"!")
    if data.startswith(b"abort"):
        os.abort()
    raise PlantedError("refused in one line")


def _target(name, call, seeds) -> Target:
    return Target(name, "a planted flaw", [("input.bin", [])], call,
                  (("tests.fuzz.planted", "PlantedError"),), {}, 2.0,
                  extra_seeds=lambda: list(seeds))


UNSAFE_PICKLE = _target("unsafe_pickle", _unsafe_pickle, [
    b"\x80\x02cfuzz.harness\ntripwire\n)R.",
    b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85R."])
FLAWED = _target("flawed", _flawed, [
    b"fine", b"undocumented", b"two lines", b"allocate", b"hang",
    b"escape", b"absolute", b"overwrite"])
ABORTS = _target("aborts", _flawed, [b"fine", b"abort", b"fine again"])
