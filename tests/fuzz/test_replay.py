"""Every fuzz target's seeds (``tests/fixtures/``), kept corpus
(``fuzz/corpus/``) and regression inputs (``fuzz/regressions/``) hold
every property of ``fuzz/harness.py``: only the reader's documented
errors, in one line; bounded memory, time and output; no code run; no
crash (each target in a child process, so a segfault counts)."""

import pytest

from fuzz.replay import inputs, replay
from fuzz.targets import TARGETS

#: the readers that build no model: one child replays them all
READERS = sorted(name for name, t in TARGETS.items() if not t.builds_model)
MODELS = sorted(name for name, t in TARGETS.items() if t.builds_model)


def test_every_target_has_inputs_to_replay():
    for name in TARGETS:
        assert len(inputs(name)) >= 2, name


@pytest.mark.slow
@pytest.mark.parametrize("names", [READERS, MODELS],
                         ids=["readers", "model builders"])
def test_replay_holds_every_property(names):
    assert replay(names, timeout=300) == []
