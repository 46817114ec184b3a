"""``graph_function`` traces without AutoGraph, passes ``tf.function``'s
arguments on, and is the package's only way to make a ``tf.function``."""

import re

import numpy as np
import pytest
import tensorflow as tf

from helpers import REPO_ROOT

from bilm_keras._utils.graph_function import graph_function


def branch_on_a_tensor(x):
    if tf.reduce_sum(x) > 0:  # AutoGraph would make this a tf.cond
        return x
    return -x


def test_a_python_if_on_a_tensor_fails_while_tracing():
    x = tf.constant([-1.0, -2.0])
    # the same function under tf.function's default is converted ...
    np.testing.assert_array_equal(tf.function(branch_on_a_tensor)(x),
                                  [1.0, 2.0])
    # ... and with AutoGraph off it is not: the branch cannot be traced
    with pytest.raises(TypeError, match="Python `bool` is not allowed"):
        graph_function(branch_on_a_tensor)(x)


def test_used_as_a_decorator_with_tf_function_s_arguments():
    @graph_function
    def double(x):
        return 2 * x

    @graph_function(input_signature=[tf.TensorSpec([None], tf.int32)])
    def increment(x):
        return x + 1

    np.testing.assert_array_equal(double(tf.constant([1, 2])), [2, 4])
    np.testing.assert_array_equal(increment(tf.constant([1, 2])), [2, 3])
    with pytest.raises(TypeError):  # the input signature holds
        increment(tf.constant([1.0]))
    # one trace for both lengths: the signature's None dimension
    increment(tf.constant([1, 2, 3]))
    assert increment.experimental_get_tracing_count() == 1


def test_no_other_tf_function_in_the_package():
    # code only: a mention in a docstring or comment is in double backticks
    # or after a '#'
    call = re.compile(r"^[^#`]*\btf\.function\b")
    found = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for path in sorted((REPO_ROOT / "bilm_keras").rglob("*.py"))
        if path.name != "graph_function.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if call.match(line)
    ]
    assert found == []
