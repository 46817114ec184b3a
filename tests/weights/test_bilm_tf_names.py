"""bilm-tf's names against what bilm-tf itself wrote: the datasets of its
``dump_weights`` and the variables of its training checkpoints in both
generations (tests/fixtures/bilm_tf_run, made by bilm-tf's own code); the
gate order and forget bias against an independent numpy LSTM step; and the
module imported without TensorFlow."""

import doctest
import subprocess
import sys

import h5py
import numpy as np
import numpy_reference as nr
import pytest
import tensorflow as tf
from helpers import REPO_ROOT, user_env

from bilm_keras.weights import bilm_tf_names as names

RUN = REPO_ROOT / "tests" / "fixtures" / "bilm_tf_run"


def _fixture_datasets():
    found = []
    with h5py.File(RUN / "lm_weights.hdf5", "r") as f:
        f.visititems(lambda name, obj: found.append(name)
                     if isinstance(obj, h5py.Dataset) else None)
    return sorted(found)


def _expected_datasets(n_filters, n_highway, n_layers):
    """The fixture's model (README: 4 filters, 2 highways, projected, two
    directions of 2 layers), named through the module."""
    datasets = [names.CHAR_EMBED, names.PROJECTION_KERNEL,
                names.PROJECTION_BIAS]
    for i in range(n_filters):
        datasets += [names.conv_kernel(i), names.conv_bias(i)]
    for k in range(n_highway):
        for part in names.HIGHWAY_PARTS:
            datasets += [names.highway_kernel(k, part),
                         names.highway_bias(k, part)]
    for d in range(2):
        for layer in range(n_layers):
            p = names.lstm_hdf5_prefix(d, layer)
            datasets += [f"{p}/{leaf}" for leaf in (
                names.LSTM_KERNEL, names.LSTM_BIAS, names.LSTM_PROJECTION)]
    return sorted(datasets)


def test_dataset_names_are_bilm_tf_dumps():
    assert _expected_datasets(4, 2, 2) == _fixture_datasets()


@pytest.mark.parametrize("sub, generation", [("save_dir", names.TF_1_5),
                                             ("save_dir_tf12", names.TF_1_2)])
def test_checkpoint_names_of_both_generations(sub, generation):
    stored = {name for name, _ in tf.train.list_variables(
        str(RUN / sub / "model.ckpt-40"))}
    assert names.lstm_generation(stored) == generation
    weights = {n for n in stored if n.startswith(names.LM_SCOPE)
               and not n.endswith(names.ADAGRAD_SUFFIX)}
    expected = {names.checkpoint_name(d, generation)
                for d in _fixture_datasets()}
    assert weights == expected | {names.SOFTMAX_W, names.SOFTMAX_B}
    assert {n + names.ADAGRAD_SUFFIX for n in weights} <= stored
    assert names.GLOBAL_STEP in stored


def test_inference_graph_names():
    # bilm-tf's model.py (_pretrained_initializer's weight_name_map) under
    # TF >= 1.5, as its TF1 Hub modules hold them under "module/bilm/"
    root = "RNN_1/RNN/MultiRNNCell/Cell3"
    for leaf, tf_leaf in (("W_0", "kernel"), ("B", "bias"),
                          ("W_P_0", "projection/kernel")):
        assert names.tf1_name(f"{root}/LSTMCell/{leaf}",
                              names.TF_1_5_MODEL) == (
            f"{root}/rnn/lstm_cell/{tf_leaf}")
    hub = ["module/bilm/CNN/W_cnn_0",
           f"module/bilm/{root}/rnn/lstm_cell/kernel"]
    assert names.lstm_generation(hub, scope="module/bilm/") == (
        names.TF_1_5_MODEL)
    assert names.lstm_generation(hub, scope="module/bilm/",
                                 generations=(names.TF_1_5,
                                              names.TF_1_2)) is None
    for generation in names.GENERATIONS:
        assert names.tf1_name("CNN_high_1/W_carry", generation) == (
            "CNN_high_1/W_carry")


def test_deeppavlov_static_rnn_is_the_training_generation():
    # DeepPavlov's trainer: static_rnn in variable_scope("RNN_k") under lm/
    name = "lm/RNN_0/rnn/multi_rnn_cell/cell_1/lstm_cell/projection/kernel"
    assert names.lstm_generation([name]) == names.TF_1_5
    assert names.checkpoint_name(
        "RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0", names.TF_1_5) == name


def test_unknown_generation_is_named():
    with pytest.raises(ValueError, match="generation: expected one of "
                                         "'tf>=1.5'.*found 'tf2'"):
        names.tf1_name("char_embed", "tf2")


def _torch_step(x, c, h, w_ih, w_hh, b):
    """torch ``LSTMCell``: gates (i, f, g, o), no forget bias."""
    z = x @ w_ih.T + h @ w_hh.T + b
    i, f, g, o = np.split(z, 4, axis=-1)
    sig = nr._sigmoid
    c = sig(f) * c + sig(i) * np.tanh(g)
    return c, sig(o) * np.tanh(c)


def test_gates_and_forget_bias_make_tf1s_cell_compute_torchs():
    rng = np.random.default_rng(0)
    n_in, n_h, batch = 3, 5, 2
    w_ih = rng.normal(size=(4 * n_h, n_in))
    w_hh = rng.normal(size=(4 * n_h, n_h))
    b = rng.normal(size=(4 * n_h,))
    x = rng.normal(size=(batch, n_in))
    c0, h0 = rng.normal(size=(batch, n_h)), rng.normal(size=(batch, n_h))
    W = names.to_tf1_gates(np.concatenate([w_ih.T, w_hh.T]), "ifjo")
    B = names.without_forget_bias(names.to_tf1_gates(b, "ifjo"))
    got = nr.lstm_step(x, c0, h0, W, B, np.eye(n_h), None, None)
    want = _torch_step(x, c0, h0, w_ih, w_hh, b)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert names.TF_FORGET_BIAS == 1.0 and names.GATE_ORDER == "ijfo"


def test_gate_blocks_along_another_axis():
    x = np.arange(8).reshape(4, 2)  # Paddle's (c, i, f, o) along axis 0
    np.testing.assert_array_equal(names.to_tf1_gates(x, "jifo", axis=0),
                                  [[2, 3], [0, 1], [4, 5], [6, 7]])
    with pytest.raises(ValueError, match="order: expected the letters of "
                                         "'ijfo', found 'ifgo'"):
        names.to_tf1_gates(x, "ifgo")


def test_docstring_examples():
    assert doctest.testmod(names).failed == 0


def test_imports_no_tensorflow():
    code = ("import sys\n"
            "import bilm_keras.weights.bilm_tf_names\n"
            "heavy = {'tensorflow', 'keras', 'h5py'} & set(sys.modules)\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT,
                          env=user_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
