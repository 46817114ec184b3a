"""PaddleNLP 2.x ELMo ``.pdparams`` -> bilm-tf's layout: the fixture made by
PaddleNLP's own code under paddlepaddle 2.6.2
(``tests/fixtures/paddlenlp_elmo``), converted, gives PaddleNLP's
``ELMoEmbedder.encode`` embeddings and its softmax's log-probabilities;
both ``.pdparams`` layouts and both numpy module names convert alike; bad
input is one line naming the file, the key, the expected and the found."""

import os
import pathlib
import pickle
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest
from helpers import REPO_ROOT, user_env

from bilm_keras import BidirectionalLanguageModel, cli
from bilm_keras.data.batcher import Batcher
from bilm_keras.data.vocabulary import Vocabulary
from bilm_keras.weights.paddle_conversion import convert_paddle
from bilm_keras.weights.paddle_model import PaddleFormatError
from bilm_keras.weights.paddlenlp_elmo import read_paddlenlp

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / \
    "paddlenlp_elmo"
PDPARAMS = FIXTURES / "elmo.pdparams"
VOCAB = FIXTURES / "vocab.txt"
LSTM = "_elmobilm.backward_lstm_layer_1."


def _sentences():
    with open(FIXTURES / "sentences.txt", encoding="utf-8") as f:
        return [line.split() for line in f]


def _trusted_state():
    # the committed fixture, read by numpy's own unpickler, to alter
    with open(PDPARAMS, "rb") as f:
        return pickle.load(f)


def _write_state(path, state):
    path.write_bytes(pickle.dumps(state, protocol=4))
    return path


@pytest.fixture(scope="module")
def model():
    return read_paddlenlp(PDPARAMS, vocab_file=VOCAB)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("pnlp") / "out"
    convert_paddle(PDPARAMS, out, vocab_file=VOCAB)
    lm = BidirectionalLanguageModel(out / "options.json",
                                    out / "lm_weights.hdf5")
    return out, lm, Batcher(str(out / "vocab.txt"), 50)


def test_options_and_layout(model):
    assert model.system == "paddlenlp"
    assert model.options["lstm"] == {
        "dim": 16, "projection_dim": 16, "n_layers": 2,
        "use_skip_connections": False}
    assert model.options["char_cnn"]["filters"] == [[1, 4], [2, 8], [3, 8]]
    assert model.options["char_cnn"]["n_highway"] == 2
    assert model.options["char_cnn"]["n_characters"] == 262
    assert model.options["n_tokens_vocab"] == 24
    w = model.lm_weights
    assert w["char_embed"].shape == (261, 4)  # no padding row in the file
    assert w["CNN/W_cnn_2"].shape == (1, 3, 4, 8)
    assert w["CNN_proj/W_proj"].shape == (20, 16)
    assert w["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"].shape == (32, 64)
    assert not any("W_P_0" in name for name in w)  # no cell projection
    assert model.softmax_weight.shape == (24, 16)
    assert all(v.dtype == np.float32 for v in w.values())


def test_vocab_reads_to_paddlenlps_ids(model, converted):
    # the target ids PaddleNLP's own Vocabulary gave (log_probs.npz)
    assert model.vocab[:4] == ["<UNK>", "<S>", "</S>", "<PAD>"]
    targets = np.load(FIXTURES / "log_probs.npz")
    vocab = Vocabulary(converted[0] / "vocab.txt", validate_file=True)
    assert vocab.unk == 0 and vocab.bos == 1 and vocab.eos == 2
    for i, sentence in enumerate(_sentences()):
        np.testing.assert_array_equal(
            vocab.encode(sentence, split=False)[1:], targets[f"targets_{i}"])


def _same_model(a, b):
    assert a.options == b.options and a.vocab == b.vocab
    assert a.lm_weights.keys() == b.lm_weights.keys()
    for name in a.lm_weights:
        np.testing.assert_array_equal(a.lm_weights[name], b.lm_weights[name],
                                      err_msg=name)
    np.testing.assert_array_equal(a.softmax_weight, b.softmax_weight)
    np.testing.assert_array_equal(a.softmax_bias, b.softmax_bias)


def test_both_layouts_and_numpy_module_names_convert_alike(model, tmp_path):
    without = FIXTURES / "elmo_no_bias_hh.pdparams"
    assert not any(k.endswith("bias_hh")
                   for k in read_paddlenlp(without).lm_weights)
    _same_model(read_paddlenlp(without, vocab_file=VOCAB), model)
    numpy2 = _write_state(tmp_path / "numpy2.pdparams", _trusted_state())
    assert b"numpy._core.multiarray" in numpy2.read_bytes()
    assert b"numpy.core.multiarray" in PDPARAMS.read_bytes()
    _same_model(read_paddlenlp(numpy2, vocab_file=VOCAB), model)


def _layers(embedding):
    """(3, T, 2P) -> {(layer, direction): (T, P)}."""
    half = embedding.shape[-1] // 2
    return {(k, d): embedding[k, :, d * half:(d + 1) * half]
            for k in range(embedding.shape[0]) for d in (0, 1)}


@pytest.mark.slow
def test_embeddings_match_paddlenlp_encode(converted):
    _, lm, batcher = converted
    expected = np.load(FIXTURES / "embeddings.npz")
    sentences = _sentences()
    batch = lm(batcher.batch_sentences(sentences))["lm_embeddings"].numpy()
    for i, sentence in enumerate(sentences):
        alone = lm(batcher.batch_sentences([sentence]))["lm_embeddings"]
        for found in (alone.numpy()[0], batch[i, :, :len(sentence)]):
            ref = expected[f"sentence_{i}"]
            assert found.shape == ref.shape
            for key, value in _layers(ref).items():
                np.testing.assert_allclose(
                    _layers(found)[key], value, rtol=0, atol=1e-5,
                    err_msg=f"sentence {i}, (layer, direction) {key}")


@pytest.mark.slow
def test_model_without_projection(tmp_path):
    # filters adding up to projection_dim: PaddleNLP's char-CNN has no
    # projection, nor has bilm-tf's then
    out = tmp_path / "no-projection"
    convert_paddle(FIXTURES / "elmo_no_projection.pdparams", out,
                   vocab_file=VOCAB)
    with h5py.File(out / "lm_weights.hdf5", "r") as f:
        assert "CNN_proj" not in f
    expected = np.load(FIXTURES / "embeddings_no_projection.npz")
    bilm = BidirectionalLanguageModel.from_pretrained(out)
    for i, found in enumerate(bilm.embed_sentences(_sentences())):
        np.testing.assert_allclose(found, expected[f"sentence_{i}"],
                                   rtol=0, atol=1e-5, err_msg=f"sentence {i}")


def test_encode_carries_states_across_batches_and_we_do_not(converted):
    # embeddings_carry.npz: encode with batches of 2; the first batch
    # starts from zero states, later ones from the previous batch's ends
    _, lm, batcher = converted
    carried = np.load(FIXTURES / "embeddings_carry.npz")
    for i, sentence in enumerate(_sentences()):
        ours = lm(batcher.batch_sentences([sentence]))["lm_embeddings"]
        diff = np.abs(ours.numpy()[0] - carried[f"sentence_{i}"])
        assert diff[0].max() < 1e-5  # the char-CNN has no state
        if i < 2:
            assert diff.max() < 1e-5
        else:
            assert diff[1:].max() > 1e-2


def test_log_probs_match_paddlenlp_softmax(model, converted):
    _, lm, batcher = converted
    expected = np.load(FIXTURES / "log_probs.npz")
    sentences = _sentences()
    out = lm.backbone(batcher.batch_sentences(sentences))
    w = model.softmax_weight.astype(np.float64)
    b = model.softmax_bias.astype(np.float64)

    def log_softmax(h):  # (T, P) -> (T, V)
        logits = h.astype(np.float64) @ w.T + b
        logits -= logits.max(-1, keepdims=True)
        return logits - np.log(np.exp(logits).sum(-1, keepdims=True))

    for i, sentence in enumerate(sentences):
        ids = expected[f"targets_{i}"]  # tokens 1..n+1 of <S> words </S>
        n = len(sentence) + 2
        fw = log_softmax(out["forward"][-1].numpy()[i, :n])
        bw = log_softmax(out["backward"][-1].numpy()[i, :n])
        # forward: position t predicts token t + 1
        found_fw = fw[np.arange(n - 1), ids]
        # backward, in original order: position t predicts token t - 1;
        # PaddleNLP's k-th backward target is position n - 1 - k's
        tokens = np.concatenate([[1], ids])  # <S> = 1
        found_bw = bw[n - 1 - np.arange(n - 1), tokens[n - 2 - np.arange(
            n - 1)]]
        np.testing.assert_allclose(found_fw, expected[f"forward_{i}"],
                                   rtol=1e-4, err_msg=f"sentence {i}")
        np.testing.assert_allclose(found_bw, expected[f"backward_{i}"],
                                   rtol=1e-4, err_msg=f"sentence {i}")
        for found, key in ((found_fw, "forward"), (found_bw, "backward")):
            np.testing.assert_allclose(
                np.exp(-found.mean()), np.exp(-expected[f"{key}_{i}"].mean()),
                rtol=1e-4)


# ------------------------------------------------------------- bad input
def _altered(**changes):
    state = _trusted_state()
    for key, value in changes.items():
        key = key.replace("__", ".")
        if value is None:
            del state[key]
        else:
            state[key] = value
    return state


@pytest.mark.parametrize("state, message", [
    (_altered(**{"_token_embding_layer._highway_layer.transform_linear_1"
                 ".bias": None}),
     ("_token_embding_layer._highway_layer.transform_linear_1.bias: expected "
     "a parameter of shape (20,) (a highway over 20 filters), found none")),
    (_altered(**{LSTM + "weight_hh_l0": np.zeros((64, 15), np.float32),
                 LSTM + "0.cell.weight_hh": np.zeros((64, 15), np.float32)}),
     LSTM + "weight_hh_l0: expected shape (64, 16) (an LSTM of hidden size "
     "16), found (64, 15)"),
    (_altered(**{LSTM + "weight_ih_l0": None, LSTM + "0.cell.weight_ih": None}),
     LSTM + "weight_ih_l0: expected a parameter of shape (64, 16)"),
    (_altered(**{LSTM + "0.cell.bias_ih": np.ones(64, np.float32)}),
     LSTM + "0.cell.bias_ih: expected the same values as " + LSTM +
     "bias_ih_l0 (one parameter under two names), found others"),
    (_altered(**{"_linear_layer.weight": np.zeros((15, 24), np.float32)}),
     ("_linear_layer.weight: expected shape (16, vocabulary) (the pre-train "
     "model's softmax), found (15, 24)")),
    (_altered(**{"_linear_layer.weight": None}),
     "_linear_layer.weight: expected shape (16, vocabulary)"),
    (_altered(**{"_elmobilm.forward_lstm_layer_2.weight_ih_l0":
                 np.zeros((64, 16), np.float32)}),
     ("_elmobilm.backward_lstm_layer_N: expected 3 layers (as forward), "
     "found 2")),
    (_altered(**{"_token_embding_layer.cnn_layer_1.weight":
                 np.zeros((8, 5, 1, 2), np.float32)}),
     ("_token_embding_layer.cnn_layer_1.weight: expected shape (filters, 4, "
     "1, width)")),
    (_altered(**{"_token_embding_layer.cnn_layer_2.weight":
                 np.zeros((2, 4, 1, 3), np.float32),
                 "_token_embding_layer.cnn_layer_2.bias":
                 np.zeros(2, np.float32)}),
     ("_token_embding_layer.cnn_layer_N: expected at least projection_dim=16"
      " filters in total (bilm-tf's char-CNN projects down only), found 14")),
    (_altered(extra=np.zeros(3, np.float32)),
     "extra: expected only PaddleNLP ELMo's parameters, found 1 more"),
    (_altered(**{"_linear_layer.bias": np.zeros(24, np.int64)}),
     "_linear_layer.bias: expected a floating-point array, found int64"),
    ({"linear.weight": np.zeros((4, 4), np.float32),
      "linear.bias": np.zeros(4, np.float32)},
     ("_token_embding_layer._char_embedding_layer.weight: expected "
     "PaddleNLP's ELMo (its char table), found another model's parameters: "
     "linear.bias, linear.weight")),
], ids=["missing-key", "shape", "missing-lstm", "names-disagree",
        "softmax-shape", "no-softmax", "layer-counts", "conv-shape",
        "filters-below-projection", "extra",
        "dtype", "not-elmo"])
def test_bad_state_is_one_line(tmp_path, state, message):
    path = _write_state(tmp_path / "bad.pdparams", state)
    with pytest.raises(PaddleFormatError) as e:
        read_paddlenlp(path, vocab_file=VOCAB)
    assert str(e.value) == f"{path}: {message}" or \
        str(e.value).startswith(f"{path}: {message}")
    assert "\n" not in str(e.value)


class _RunsCode:
    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def test_code_in_pdparams_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "ran"
    state = _altered(**{"_linear_layer.bias": _RunsCode(f"touch {marker}")})
    path = _write_state(tmp_path / "evil.pdparams", state)
    with pytest.raises(PaddleFormatError, match="posix.system|os.system"):
        read_paddlenlp(path, vocab_file=VOCAB)
    assert not marker.exists()


@pytest.mark.parametrize("lines, message", [
    (["的", "我们"], "lines: expected 20 words"),
    (["的"] * 20, "line 2: expected a word not already in the vocabulary"),
    (["<S>"] + [f"w{i}" for i in range(19)],
     "line 1: expected a word not already in the vocabulary"),
    (["<UNK>"] + [f"w{i}" for i in range(19)],
     "line 1: expected a word, found '<UNK>'"),
])
def test_bad_vocabulary_is_one_line(tmp_path, lines, message):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(w + "\n" for w in lines), encoding="utf-8")
    with pytest.raises(PaddleFormatError, match=message) as e:
        read_paddlenlp(PDPARAMS, vocab_file=vocab)
    assert str(e.value).startswith(f"{vocab}: ")


def test_reading_needs_neither_tensorflow_nor_paddle():
    code = (
        "import sys\n"
        "from bilm_keras.weights.paddlenlp_elmo import read_paddlenlp\n"
        f"m = read_paddlenlp({str(PDPARAMS)!r}, vocab_file={str(VOCAB)!r})\n"
        "assert len(m.vocab) == 24\n"
        "heavy = ('tensorflow', 'paddle', 'keras')\n"
        "print(sorted(k for k in sys.modules if k.split('.')[0] in heavy))\n"
    )
    # a fresh interpreter, not helpers.python_argv: what it imports is
    # the point
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT,
                          env=user_env(), capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # (the library's log line may come before it)
    assert proc.stdout.strip().splitlines()[-1] == "[]"


# --------------------------------------------- the command and its users
@pytest.mark.slow  # the quick tier has convert_paddle and the model
def test_convert_paddle_then_embed_and_from_pretrained(tmp_path, capsys):
    out = tmp_path / "pnlp-elmo"
    assert cli.main(["convert-paddle", "--checkpoint", str(PDPARAMS),
                     "--vocab_file", str(VOCAB), "--outdir", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [
        "lm_weights.hdf5", "options.json", "vocab.txt"]
    expected = np.load(FIXTURES / "embeddings.npz")
    sentences = _sentences()

    bilm = BidirectionalLanguageModel.from_pretrained(out)
    for i, found in enumerate(bilm.embed_sentences(sentences)):
        np.testing.assert_allclose(found, expected[f"sentence_{i}"],
                                   rtol=0, atol=1e-5, err_msg=f"sentence {i}")

    outfile = tmp_path / "elmo.hdf5"
    assert cli.main([
        "embed", "--options_file", str(out / "options.json"),
        "--weight_file", str(out / "lm_weights.hdf5"),
        "--vocab_file", str(out / "vocab.txt"),
        "--dataset_file", str(FIXTURES / "sentences.txt"),
        "--outfile", str(outfile)]) == 0
    with h5py.File(outfile, "r") as f:
        for i in range(len(sentences)):
            np.testing.assert_allclose(f[str(i)][...],
                                       expected[f"sentence_{i}"],
                                       rtol=0, atol=1e-5)


@pytest.mark.parametrize("make_state, pattern", [
    (lambda marker: _altered(**{
        "_linear_layer.bias": _RunsCode(f"touch {marker}")}),
     r"found the global (posix|os)\.system, which is not a numpy array"),
    (lambda marker: _altered(**{
        LSTM + "weight_hh_l0": np.zeros((64, 15), np.float32),
        LSTM + "0.cell.weight_hh": np.zeros((64, 15), np.float32)}),
     r"weight_hh_l0: expected shape \(64, 16\)"),
    (lambda marker: _altered(**{
        "_token_embding_layer.cnn_layer_2.bias": None}),
     r"cnn_layer_2\.bias: expected a parameter of shape \(8,\)"),
    (lambda marker: {"encoder.weight": np.zeros((4, 4), np.float32)},
     (r"expected PaddleNLP's ELMo \(its char table\), found another "
      r"model's parameters: encoder\.weight")),
], ids=["code", "shape", "missing-key", "not-elmo"])
def test_convert_paddle_refuses_bad_pdparams(tmp_path, capsys, make_state,
                                             pattern):
    marker = tmp_path / "ran"
    path = _write_state(tmp_path / "bad.pdparams", make_state(marker))
    out = tmp_path / "out"
    with pytest.raises(PaddleFormatError, match=pattern) as info:
        convert_paddle(path, out, vocab_file=VOCAB)
    code = cli.main(["convert-paddle", "--checkpoint", str(path),
                     "--vocab_file", str(VOCAB), "--outdir", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert str(info.value) in err and str(path) in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()
            if p.name.startswith(".out.")] == []
    assert not marker.exists()  # the pickle's code never ran


# ------------------------------------------- Adagrad's accumulators (.pdopt)
RUN = FIXTURES / "checkpoints"


def test_accumulators_move_as_the_weights(tmp_path):
    # a .pdopt whose every accumulator is its parameter's value: read, it
    # must be the converted weights (B: bias_ih alone, no forget shift)
    state = _trusted_state()
    names = state["StructuredToParameterName@@"]
    moments = {f"{names[k]}_moment_0": v for k, v in state.items()
               if k in names and not k.endswith("bias_hh")}
    path = _write_state(tmp_path / "final.pdparams", state)
    _write_state(tmp_path / "final.pdopt", moments)
    model = read_paddlenlp(path)
    acc = model.accumulators
    assert sorted(acc) == sorted([*model.lm_weights, "softmax/W",
                                  "softmax/b"])
    for name, weight in model.lm_weights.items():
        if name.endswith("/B"):  # the fixture's bias_hh is zero
            expected = weight.copy()
            expected[32:48] += 1.0  # the forget block, unshifted
            np.testing.assert_allclose(acc[name], expected, rtol=0,
                                       atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(acc[name], weight, err_msg=name)
    np.testing.assert_array_equal(acc["softmax/W"], model.softmax_weight)
    np.testing.assert_array_equal(acc["softmax/b"], model.softmax_bias)


def test_paddles_own_adagrad_accumulators():
    # checkpoints/: two of run_pretrain.py's Adagrad steps (from 1.0)
    model = read_paddlenlp(RUN / "final.pdparams", vocab_file=VOCAB)
    acc = model.accumulators
    assert all(v.min() >= 1.0 for v in acc.values())
    assert acc["softmax/b"].max() > 1.0
    # the char table's rows of bytes no sentence holds were never trained
    text = (FIXTURES / "sentences.txt").read_bytes()
    unseen = [b for b in range(256) if bytes([b]) not in text]
    seen = sorted(set(text) - {ord("\n"), ord(" ")})
    # (file row r is char id r + 1, byte r)
    assert (acc["char_embed"][unseen] == 1.0).all()
    assert (acc["char_embed"][seen] > 1.0).any()
    assert read_paddlenlp(FIXTURES / "elmo.pdparams").accumulators == {}


@pytest.mark.parametrize("change, message", [
    (lambda m: m.pop("lstm_cell_12.w_1_moment_0"),
     ("lstm_cell_12.w_1_moment_0: expected the Adagrad accumulator of "
      "_elmobilm.forward_lstm_layer_0.weight_hh_l0 (shape (64, 16)), found "
      "none")),
    (lambda m: m.update({"linear_21.b_0_moment_0": np.ones(23, np.float32)}),
     ("linear_21.b_0_moment_0: expected shape (24,) (as _linear_layer.bias),"
      " found (23,)")),
], ids=["missing", "shape"])
def test_bad_pdopt_is_one_line(tmp_path, change, message):
    shutil.copy(RUN / "final.pdparams", tmp_path / "final.pdparams")
    with open(RUN / "final.pdopt", "rb") as f:
        moments = pickle.load(f)
    change(moments)
    _write_state(tmp_path / "final.pdopt", moments)
    model = read_paddlenlp(tmp_path / "final.pdparams")
    # read on first use only: converting never reads the .pdopt
    convert_paddle(tmp_path / "final.pdparams", tmp_path / "out",
                   vocab_file=VOCAB)
    with pytest.raises(PaddleFormatError) as e:
        model.accumulators["softmax/b"]
    assert str(e.value) == f"{tmp_path / 'final.pdopt'}: {message}"
