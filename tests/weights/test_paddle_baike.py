"""PaddlePaddle's Fluid ELMo (the baike model): the fixture checkpoint that
Paddle 1.8.5 wrote (tests/fixtures/paddle_baike/), converted, reproduces
Paddle's own per-direction, per-layer outputs and per-token
log-probabilities; every bad input is one line naming the file and the
field, with nothing written."""

import json
import shutil
import struct

import h5py
import numpy as np
import pytest

from bilm_keras import BidirectionalLanguageModel, cli
from bilm_keras.data.batcher import TokenBatcher
from bilm_keras.weights.paddle_baike import read_baike
from bilm_keras.weights.paddle_conversion import convert_paddle
from bilm_keras.weights.paddle_model import PaddleFormatError

TOL = 1e-5


@pytest.fixture(scope="module")
def reference(paddle_baike_fixtures):
    """Paddle's outputs and the sentences they are of."""
    sentences = [line.split() for line in (
        paddle_baike_fixtures / "sentences.txt").read_text(
            "utf-8").splitlines()]
    with np.load(paddle_baike_fixtures / "reference.npz") as f:
        return sentences, dict(f)


@pytest.fixture(scope="module")
def bilm(paddle_baike_converted):
    conv = paddle_baike_converted
    return BidirectionalLanguageModel(
        conv["options_file"], conv["weight_file"],
        use_character_inputs=False,
        embedding_weight_file=conv["weight_file"])


def _backbone_outputs(bilm, vocab_file, sentences):
    """Every position (``<S>`` and ``</S>`` too) of each direction's
    layers, in natural time order: (ids, embeddings, forward, backward)."""
    ids = TokenBatcher(vocab_file).batch_sentences(sentences)
    out = bilm.backbone(ids)
    return (ids, np.asarray(out["token_embeddings"]),
            [np.asarray(x) for x in out["forward"]],
            [np.asarray(x) for x in out["backward"]])


def test_converted_files(paddle_baike_converted, paddle_baike_fixtures):
    conv = paddle_baike_converted
    options = json.loads(open(conv["options_file"]).read())
    assert options["lstm"] == {
        "dim": 16, "projection_dim": 8, "n_layers": 2, "cell_clip": 3.0,
        "proj_clip": 3.0, "use_skip_connections": True}
    assert options["n_tokens_vocab"] == 35 and "char_cnn" not in options
    with h5py.File(conv["weight_file"], "r") as f:
        assert f["embedding"].shape == (35, 8)
        cell = "RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell"
        assert f[f"{cell}/W_0"].shape == (16, 64)  # [x ; m_prev] x 4 gates
        assert f[f"{cell}/W_P_0"].shape == (16, 8)
        assert f[f"{cell}/B"].shape == (64,)
    assert open(conv["vocab_file"], encoding="utf-8").read() == (
        paddle_baike_fixtures / "vocab.txt").read_text("utf-8")


def test_every_layer_reproduces_paddle(bilm, paddle_baike_converted,
                                       reference):
    """All six sentences in one padded batch: the embedding and each
    direction's two layers at every position equal Paddle's LoD batch."""
    sentences, ref = reference
    ids, emb, fw, bw = _backbone_outputs(
        bilm, paddle_baike_converted["vocab_file"], sentences)
    for i in range(len(sentences)):
        n = len(ref[f"s{i}_ids"])
        # our token ids are Paddle's + 1 (0 pads)
        np.testing.assert_array_equal(ids[i, :n] - 1, ref[f"s{i}_ids"])
        np.testing.assert_allclose(emb[i, :n], ref[f"s{i}_embedding"],
                                   rtol=0, atol=TOL)
        for layer in (1, 2):
            np.testing.assert_allclose(fw[layer - 1][i, :n],
                                       ref[f"s{i}_fw_{layer}"],
                                       rtol=0, atol=TOL)
            # Paddle's backward rows are in its reversed stream's order
            np.testing.assert_allclose(bw[layer - 1][i, :n][::-1],
                                       ref[f"s{i}_bw_{layer}"],
                                       rtol=0, atol=TOL)


def _log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def test_log_probabilities_reproduce_paddle(bilm, paddle_baike_converted,
                                            paddle_baike_fixtures,
                                            reference):
    """The top layer through Paddle's own softmax (float64 numpy) gives
    Paddle's per-token log-probabilities of the next word, each
    direction."""
    sentences, ref = reference
    model = read_baike(paddle_baike_fixtures / "checkpoint",
                       paddle_baike_fixtures / "vocab.txt")
    w = model.softmax_weight.astype(np.float64)
    b = model.softmax_bias.astype(np.float64)
    _, _, fw, bw = _backbone_outputs(
        bilm, paddle_baike_converted["vocab_file"], sentences)
    for i in range(len(sentences)):
        n = len(ref[f"s{i}_ids"])
        for top, ids, key in (
            (fw[1][i, :n], ref[f"s{i}_ids"], "fw"),
            (bw[1][i, :n][::-1], ref[f"s{i}_ids_reverse"], "bw"),
        ):
            logp = _log_softmax(top[:-1] @ w.T + b)
            got = logp[np.arange(n - 1), ids[1:]]
            np.testing.assert_allclose(got, ref[f"s{i}_{key}_logprob"],
                                       rtol=1e-4)


@pytest.mark.slow
def test_embed_sentences_and_from_pretrained(paddle_baike_converted,
                                             reference):
    """The converted folder as a SPEC: ``from_pretrained(OUT)`` reads its
    vocab.txt and token table; ``embed_sentences`` gives bilm-tf's three
    layers at the word positions (backward re-reversed)."""
    sentences, ref = reference
    bilm = BidirectionalLanguageModel.from_pretrained(
        paddle_baike_converted["outdir"])
    assert not bilm.use_character_inputs
    vectors = bilm.embed_sentences(sentences)
    for i, v in enumerate(vectors):
        words = slice(1, len(ref[f"s{i}_ids"]) - 1)
        assert v.shape == (3, len(sentences[i]), 16)
        emb = ref[f"s{i}_embedding"][words]
        np.testing.assert_allclose(v[0], np.concatenate([emb, emb], -1),
                                   rtol=0, atol=TOL)
        for layer in (1, 2):
            expected = np.concatenate(
                [ref[f"s{i}_fw_{layer}"][words],
                 ref[f"s{i}_bw_{layer}"][::-1][words]], -1)
            np.testing.assert_allclose(v[layer], expected, rtol=0, atol=TOL)


def test_adagrad_accumulators_read(paddle_baike_fixtures):
    """The checkpoint's ``_moment_0`` files come with the weights, moved
    as the weights are (gate blocks reordered, [x ; m_prev] stacked) but
    never shifted by the forget bias."""
    model = read_baike(paddle_baike_fixtures / "checkpoint",
                       paddle_baike_fixtures / "vocab.txt")
    acc = model.accumulators
    assert set(acc) == set(model.lm_weights) | {"softmax/W", "softmax/b"}
    for key, value in acc.items():
        assert value.shape == (model.lm_weights[key].shape
                               if key in model.lm_weights else
                               {"softmax/W": (35, 8),
                                "softmax/b": (35,)}[key])
        # Adagrad starts at 1 (upstream's initial_accumulator_value) and
        # only grows
        assert value.min() >= 1.0
    # the embedding's rows that no training batch held stay at exactly 1
    assert (acc["embedding"] == 1.0).all(axis=1).any()


def test_cli_converts_and_refuses_a_full_outdir(paddle_baike_fixtures,
                                                tmp_path, capsys):
    out = tmp_path / "baike"
    args = ["convert-paddle", "--checkpoint",
            str(paddle_baike_fixtures / "checkpoint"), "--vocab_file",
            str(paddle_baike_fixtures / "vocab.txt"), "--outdir", str(out)]
    assert cli.main(args) == 0
    assert "wrote" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [
        "lm_weights.hdf5", "options.json", "vocab.txt"]
    assert cli.main(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("bilm-keras convert-paddle: error: ")
    assert len(err.splitlines()) == 1 and "--overwrite" in err
    assert cli.main(args + ["--overwrite"]) == 0


# --------------------------------------------------------------- bad input
@pytest.fixture
def checkpoint_copy(paddle_baike_fixtures, tmp_path):
    """A copy of the fixture checkpoint to break, and the OUT it must not
    create."""
    ckpt = tmp_path / "checkpoint"
    shutil.copytree(paddle_baike_fixtures / "checkpoint", ckpt)
    return ckpt, tmp_path / "out"


def _fails(ckpt, out, vocab, pattern, capsys):
    """convert_paddle and the command both refuse ``ckpt`` in one line
    matching ``pattern``, exit 1, and write nothing."""
    with pytest.raises(PaddleFormatError, match=pattern) as info:
        convert_paddle(ckpt, out, vocab_file=vocab)
    assert "\n" not in str(info.value)
    code = cli.main(["convert-paddle", "--checkpoint", str(ckpt),
                     "--vocab_file", str(vocab), "--outdir", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert str(info.value) in err
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir()
            if p.name.startswith(f".{out.name}.")] == []


def _header_end(path):
    """The offset of the data of a LoD-free variable file."""
    raw = path.read_bytes()
    (desc_size,) = struct.unpack_from("<i", raw, 16)
    return 20 + desc_size


def test_missing_variable_file(checkpoint_copy, paddle_baike_fixtures,
                               capsys):
    ckpt, out = checkpoint_copy
    (ckpt / "lstmp_3.w_1").unlink()
    _fails(ckpt, out, paddle_baike_fixtures / "vocab.txt",
           r"lstmp_3\.w_1: expected the baike model's variable, found no "
           r"such file", capsys)


def test_cut_short_variable_file(checkpoint_copy, paddle_baike_fixtures,
                                 capsys):
    ckpt, out = checkpoint_copy
    path = ckpt / "lstmp_1.w_0"
    path.write_bytes(path.read_bytes()[:-10])
    _fails(ckpt, out, paddle_baike_fixtures / "vocab.txt",
           r"lstmp_1\.w_0: data: expected 2048 bytes \(FP32 8x64\), found "
           r"2038 \(file cut short\)", capsys)


def test_file_cut_inside_its_header(checkpoint_copy, paddle_baike_fixtures,
                                    capsys):
    ckpt, out = checkpoint_copy
    path = ckpt / "softmax_bias"
    path.write_bytes(path.read_bytes()[:14])
    _fails(ckpt, out, paddle_baike_fixtures / "vocab.txt",
           r"softmax_bias: tensor version: expected 4 bytes, found 2 "
           r"\(file cut short\)", capsys)


def test_vocabulary_that_does_not_fit_the_table(checkpoint_copy,
                                                paddle_baike_fixtures,
                                                tmp_path, capsys):
    ckpt, out = checkpoint_copy
    vocab = tmp_path / "vocab.txt"
    lines = (paddle_baike_fixtures / "vocab.txt").read_text("utf-8")
    vocab.write_text(lines + "多余\n", encoding="utf-8")
    _fails(ckpt, out, vocab,
           r"vocab\.txt: lines: expected 35 words \(.*embedding_para has 35 "
           r"rows\), found 36", capsys)


def test_shape_that_does_not_fit(checkpoint_copy, paddle_baike_fixtures,
                                 capsys):
    """softmax_weight written with 34 rows: the header says so, and the
    file is otherwise whole."""
    ckpt, out = checkpoint_copy
    path = ckpt / "softmax_weight"
    raw = bytearray(path.read_bytes())
    end = _header_end(path)
    desc = bytes(raw[20:end])
    assert desc == b"\x08\x05\x10\x23\x10\x08"  # FP32, dims 35, 8
    raw[20:end] = b"\x08\x05\x10\x22\x10\x08"
    path.write_bytes(bytes(raw[:end]) + bytes(raw[end:end + 34 * 8 * 4]))
    _fails(ckpt, out, paddle_baike_fixtures / "vocab.txt",
           r"softmax_weight: dims: expected \(35, 8\) \(vocabulary 35, "
           r"projection 8, cells 16 .*\), found \(34, 8\)", capsys)


def test_unknown_data_type(checkpoint_copy, paddle_baike_fixtures, capsys):
    ckpt, out = checkpoint_copy
    path = ckpt / "lstmp_0.b_0"
    raw = bytearray(path.read_bytes())
    assert raw[20:22] == b"\x08\x05"
    raw[21] = 0x11  # VarType code 17: not a tensor data type
    path.write_bytes(bytes(raw))
    _fails(ckpt, out, paddle_baike_fixtures / "vocab.txt",
           r"lstmp_0\.b_0: data type: expected one of BOOL \(0\), .*FP32 "
           r"\(5\).*, found code 17", capsys)


def test_known_data_type_that_is_not_fp32(checkpoint_copy,
                                          paddle_baike_fixtures, capsys):
    """FP64 data of the right shape: read, and refused as not FP32."""
    ckpt, out = checkpoint_copy
    path = ckpt / "lstmp_0.b_0"
    raw = path.read_bytes()
    end = _header_end(path)
    values = np.frombuffer(raw[end:], "<f4").astype("<f8")
    path.write_bytes(raw[:21] + b"\x06" + raw[22:end] + values.tobytes())
    _fails(ckpt, out, paddle_baike_fixtures / "vocab.txt",
           r"lstmp_0\.b_0: data type: expected FP32 \(a baike parameter\), "
           r"found FP64", capsys)


def test_lod_where_none_belongs(checkpoint_copy, paddle_baike_fixtures,
                                capsys):
    """A LoD level (a sequence batch's offsets) in a parameter's file."""
    ckpt, out = checkpoint_copy
    path = ckpt / "fw_layer2_gate_w"
    raw = path.read_bytes()
    lod = np.array([0, 4, 8], "<u8").tobytes()
    path.write_bytes(raw[:4] + struct.pack("<Q", 1)
                     + struct.pack("<Q", len(lod)) + lod + raw[12:])
    _fails(ckpt, out, paddle_baike_fixtures / "vocab.txt",
           r"fw_layer2_gate_w: lod_level: expected 0 \(a parameter has no "
           r"LoD\), found 1", capsys)


def test_directory_of_another_paddle_model(paddle_baike_fixtures, tmp_path,
                                           capsys):
    _fails(paddle_baike_fixtures / "other_model", tmp_path / "out",
           paddle_baike_fixtures / "vocab.txt",
           r"other_model: expected a Fluid ELMo \(baike\) checkpoint "
           r"\(embedding_para, .*\), found fc_0\.b_0, fc_0\.w_0, fc_1\.b_0, "
           r"fc_1\.w_0", capsys)


def test_no_vocabulary(paddle_baike_fixtures, tmp_path):
    with pytest.raises(PaddleFormatError,
                       match=r"vocabulary: expected one \(pass vocab_file= "
                             r"/ --vocab_file: vocabulary_min5k\.txt from "
                             r"PaddlePaddle/models"):
        convert_paddle(paddle_baike_fixtures / "checkpoint",
                       tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_stateful_perplexity_reproduces_paddle(bilm, paddle_baike_fixtures):
    """Upstream's evaluation (perplexity.json): each direction's stream in
    batches of 2 x 4, LSTM states carried from batch to batch. Each
    direction's stack runs on its stream as upstream feeds it (the
    backward one already reversed), from the states the previous batch
    left; Paddle's softmax (float64 numpy) gives its per-direction losses
    and perplexity to 1e-4 relative."""
    import tensorflow as tf

    expected = json.loads(
        (paddle_baike_fixtures / "perplexity.json").read_text())
    model = read_baike(paddle_baike_fixtures / "checkpoint",
                       paddle_baike_fixtures / "vocab.txt")
    w = model.softmax_weight.astype(np.float64)
    b = model.softmax_bias.astype(np.float64)
    backbone = bilm.backbone
    states = {"forward": None, "backward": None}
    losses = []
    for batch in expected["batches"]:
        got = {}
        for direction, key in (("forward", "token_ids"),
                               ("backward", "token_ids_reverse")):
            ids = np.asarray(batch[key])  # (B, T) Paddle's ids
            emb = backbone.embed_tokens(tf.constant(ids + 1))
            lengths = tf.fill([ids.shape[0]], ids.shape[1])
            layers, states[direction] = backbone.run_direction(
                direction, emb, lengths, states[direction])
            top = np.asarray(layers[-1], np.float64)  # (B, T, P)
            got[direction] = _log_softmax(top @ w.T + b)
        losses.append(got)
    for batch, got in zip(expected["batches"], losses):
        for direction, key, field in (
                ("forward", "next_token_id", "forward_loss"),
                ("backward", "next_token_id_reverse", "backward_loss")):
            targets = np.asarray(batch[key])  # (B, T)
            logp = np.take_along_axis(got[direction], targets[..., None],
                                      axis=-1)
            np.testing.assert_allclose(-logp.mean(), batch[field],
                                       rtol=1e-4)
    mean_loss = np.mean([(b["forward_loss"] + b["backward_loss"]) / 2
                         for b in expected["batches"]])
    np.testing.assert_allclose(np.exp(mean_loss), expected["perplexity"],
                               rtol=1e-4)
