"""make_strategy / cluster_workers / is_chief in this process (one CPU).

Several replicas need logical devices set before TensorFlow starts, so
MirroredStrategy and two workers run in fresh processes, in
``test_distributed.py`` and ``test_lm_dataset.py`` (slow tier); these are
the quick tier's checks of the same module.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras.training.carried_states import as_step_states
from bilm_keras.training.strategy import (
    cluster_workers,
    is_chief,
    make_strategy,
)


def test_cluster_workers_counts_workers_and_chief(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert cluster_workers() == 0
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["a:1"], "worker": ["b:2", "c:3"]},
        "task": {"type": "worker", "index": 0}}))
    assert cluster_workers() == 3
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG: not valid JSON"):
        cluster_workers()


def test_one_device_is_the_default_strategy(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    default = tf.distribute.get_strategy()
    assert make_strategy(n_gpus=0) is default
    assert make_strategy(devices=["/cpu:0"]) is default
    assert is_chief(default)


def test_more_gpus_than_visible(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    n = len(tf.config.list_logical_devices("GPU"))
    with pytest.raises(ValueError, match=rf"--n_gpus: asked for {n + 1} "
                                         rf"GPUs, found {n} visible"):
        make_strategy(n_gpus=n + 1)


@pytest.mark.parametrize("unwrapped", [True, False])
def test_first_states_go_in_as_the_step_returns_them(unwrapped):
    """One local replica (here a MirroredStrategy on one CPU; a worker of
    a cluster alike): ``strategy.run`` returns plain tensors, so the first
    step's per-replica zero states, as ``as_step_states`` gives them, have
    the type of every later step's and the step traces once (twice
    without it, which the second case shows)."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    states = strategy.experimental_distribute_values_from_function(
        lambda ctx: {"forward": [(tf.zeros((2, 3)), tf.zeros((2, 4)))]})
    if unwrapped:
        states = as_step_states(strategy, states)

    @tf.function
    def step(states):
        return strategy.run(
            lambda s: tf.nest.map_structure(lambda t: t + 1.0, s),
            args=(states,))

    for _ in range(3):
        states = step(states)
    assert step.experimental_get_tracing_count() == (1 if unwrapped else 2)
    np.testing.assert_array_equal(states["forward"][0][1],
                                  np.full((2, 4), 3.0))
