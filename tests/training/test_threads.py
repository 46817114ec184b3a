"""TensorFlow's CPU thread pools for training (bilm_keras.training.threads).

The pools can be sized only before TensorFlow's first op, so each case
runs in its own process (all of them at once): a child forked from the
tests' command server (``helpers.python_argv``), which imported TensorFlow
but ran no op, so the child's runtime starts as a fresh interpreter's
(the case with ``TF_NUM_INTRAOP_THREADS`` set has a server of its own,
started in that environment); the child prints what
``configure_training_threads`` returned and the pools TensorFlow then
reports.
"""

import json
import os
import subprocess

import pytest
from helpers import python_argv

from bilm_keras.training.threads import (
    THREAD_VARIABLES,
    available_cores,
    configure_training_threads,
    cpu_training_threads,
)

#: every case a child runs: name -> (its arguments, its environment);
#: all in the slow tier (fresh interpreters, started together), the
#: quick tier checking the pure parts of the module
CASES = {
    "auto": (dict(), {}),
    "explicit": (dict(intra_op=3, inter_op=5), {}),
    # after the first op: the automatic setting keeps the pools, then an
    # explicit one fails (one process: the second call sees what the
    # first left, which is what a fresh process after an op would see)
    "after_first_op": (dict(run_op_first=True,
                            calls=[{}, dict(intra_op=3, inter_op=1)]), {}),
    "zeros": (dict(intra_op=0, inter_op=0), {}),
    "intra_only": (dict(intra_op=2), {}),
    "tensorflows_variable": (dict(), {"TF_NUM_INTRAOP_THREADS": "2"}),
}

CHILD = """
import json, sys
import tensorflow as tf
from bilm_keras.training.threads import configure_training_threads
args = json.loads(sys.argv[1])
if args.pop("run_op_first", False):
    tf.constant(1.0) + 1.0  # TensorFlow's runtime starts here
results = []
for call in args.pop("calls", [args]):
    try:
        results.append(configure_training_threads(**call))
    except RuntimeError as e:
        results.append("RuntimeError: " + str(e))
print(json.dumps(dict(
    results=results,
    pools=[tf.config.threading.get_intra_op_parallelism_threads(),
           tf.config.threading.get_inter_op_parallelism_threads()])))
"""


def _run_children(cases: dict) -> dict:
    """Each case's child's report, ``{"results": [...], "pools": [...]}``.
    The children run at once: they need nothing from each other."""
    procs = {}
    for name, (kwargs, env) in cases.items():
        environ = {k: v for k, v in os.environ.items()
                   if k not in THREAD_VARIABLES}
        environ.update(env, TF_CPP_MIN_LOG_LEVEL="3",
                       CUDA_VISIBLE_DEVICES="")
        procs[name] = subprocess.Popen(
            python_argv(environ) + ["-c", CHILD, json.dumps(kwargs)],
            env=environ,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reports = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{name}: {err[-2000:]}"
        reports[name] = json.loads(out.strip().splitlines()[-1])
    return reports


@pytest.fixture(scope="module")
def children() -> dict:
    return _run_children(CASES)


def _report(children, name):
    """``dict(result=..., pools=...)`` of a one-call case."""
    report = children[name]
    (result,) = report["results"]
    return dict(result=result, pools=report["pools"])


@pytest.mark.parametrize("cores, expected", [
    (1, (1, 2)), (2, (1, 2)), (3, (1, 2)), (4, (2, 2)), (16, (8, 2)),
])
def test_cpu_setting_is_half_the_cores_per_op_two_ops_at_a_time(
        cores, expected):
    assert cpu_training_threads(cores) == expected


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_automatic_setting_sizes_the_pools_on_a_cpu(children):
    expected = list(cpu_training_threads(available_cores()))
    assert _report(children, "auto") == dict(result=expected,
                                             pools=expected)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_explicit_counts_win(children):
    assert _report(children, "explicit") == dict(result=[3, 5],
                                                 pools=[3, 5])


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_zero_keeps_tensorflows_default_and_one_given_takes_the_other(
        children):
    assert _report(children, "zeros") == dict(result=[0, 0],
                                                   pools=[0, 0])
    # one given: the other is the automatic one
    auto_inter = cpu_training_threads(available_cores())[1]
    assert _report(children, "intra_only") == dict(
        result=[2, auto_inter], pools=[2, auto_inter])


@pytest.mark.slow
def test_tensorflows_own_variables_are_left_to_it(children):
    assert _report(children, "tensorflows_variable") == dict(
        result=None, pools=[0, 0])


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_after_the_first_op_auto_keeps_the_pools_and_explicit_fails(
        children):
    auto, explicit = children["after_first_op"]["results"]
    assert auto is None
    assert explicit.startswith(
        "RuntimeError: intra_op_threads=3, inter_op_threads=1: TensorFlow "
        "has already run in this process")
    assert children["after_first_op"]["pools"] == [0, 0]


@pytest.mark.parametrize("kwargs, message", [
    (dict(intra_op=-1), "intra_op_threads: expected an integer >= 0 or "
                        "None, found -1"),
    (dict(inter_op=1.5), "inter_op_threads: expected an integer >= 0 or "
                         "None, found 1.5"),
    (dict(intra_op=True), "intra_op_threads: expected an integer >= 0 or "
                          "None, found True"),
])
def test_a_bad_count_is_refused_before_tensorflow_is_touched(kwargs,
                                                             message):
    with pytest.raises(ValueError) as error:
        configure_training_threads(**kwargs)
    assert str(error.value) == message
