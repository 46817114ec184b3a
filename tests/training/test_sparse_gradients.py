"""The training step keeps the softmax's and the embeddings' gradients
sparse (rows the batch touched, each once): the same updates as densifying
them first, without a `(n_tokens_vocab, dim)` tensor per step."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras.training.adagrad import RowSparseAdagrad
from helpers import fixture_options, training_run


def _two_steps(train_dir, options, sparse_gradients):
    """Every variable after two training steps on the fixture corpus,
    and the step's concrete graph."""
    # one step seed for both runs: the same dropout masks and negatives
    lm, step, batches, states = training_run(
        train_dir, options, sparse_gradients=sparse_gradients,
        dropout_seed=0)
    for _ in range(2):
        batch = next(batches)
        _, _, states, _ = step(batch, states)
    graph = step.get_concrete_function(batch, states).graph
    return {v.path: v.numpy() for v in lm.variables}, graph


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
@pytest.mark.parametrize("share", [
    False,
    True,  # rows touched twice (embedding and softmax): the harder case
])
def test_sparse_update_equals_dense_update(train_dir, share):
    # dropout 0 and a tight clip: the global norm must count every row once;
    # one LSTM layer (the LSTMs' gradients are dense either way) traces
    # each step in two thirds of the time of two
    options = fixture_options(share=share, dropout=0.0,
                              all_clip_norm_val=0.05,
                              lstm={"dim": 16, "projection_dim": 8,
                                    "n_layers": 1})
    sparse, graph = _two_steps(train_dir, options, sparse_gradients=True)
    scatters = {op.type for op in graph.get_operations()
                if "Scatter" in op.type}
    assert {"ResourceScatterAdd", "ResourceScatterSub"} <= scatters
    dense, graph = _two_steps(train_dir, options, sparse_gradients=False)
    assert not any("Scatter" in op.type for op in graph.get_operations())
    assert sparse.keys() == dense.keys()
    for path in sparse:
        np.testing.assert_allclose(sparse[path], dense[path], atol=1e-6,
                                   err_msg=path)


def test_row_sparse_adagrad_equals_keras_adagrad():
    rng = np.random.default_rng(0)
    start = rng.normal(size=(10, 3)).astype("float32")
    rows = np.array([7, 1, 4], np.int64)
    steps = [rng.normal(size=(3, 3)).astype("float32") for _ in range(3)]
    result = {}
    for name, cls in (("keras", keras.optimizers.Adagrad),
                      ("rows", RowSparseAdagrad)):
        variable = keras.Variable(start.copy())
        optimizer = cls(learning_rate=0.2, initial_accumulator_value=1.0,
                        epsilon=1e-7)
        optimizer.build([variable])

        # traced and called within this iteration: the loop variables are
        # the ones it closes over
        @tf.function
        def update(values):
            gradient = tf.IndexedSlices(values, tf.constant(rows),
                                        tf.constant([10, 3], tf.int64))
            optimizer.update_step(gradient, variable,  # noqa: B023
                                  tf.constant(0.2))

        for values in steps:
            update(tf.constant(values))
        result[name] = variable.numpy()
    np.testing.assert_allclose(result["rows"], result["keras"], atol=1e-6)
    untouched = np.setdiff1d(np.arange(10), rows)
    np.testing.assert_array_equal(result["rows"][untouched], start[untouched])
    assert np.abs(result["rows"][rows] - start[rows]).min() > 0
