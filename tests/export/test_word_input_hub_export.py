"""A word-input model (the Paddle baike fixture, converted) exported as a
SavedModel: its vocabulary is a hash table in the graph, and every
signature reproduces Paddle 1.8.5's own outputs
(tests/fixtures/paddle_baike/) to 1e-5 (slow: an export and its
SavedModel, ~60 s on 2 cores); without its vocabulary the export is
refused before anything is written (quick)."""

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras.data.batcher import TokenBatcher
from bilm_keras.export.saved_model_export import ExportError, export_hub

ATOL = 1e-5


@pytest.fixture(scope="module")
def exported(paddle_baike_converted, tmp_path_factory):
    conv = paddle_baike_converted
    out = tmp_path_factory.mktemp("hub") / "baike"
    export_hub(options_file=conv["options_file"],
               weight_file=conv["weight_file"], outdir=out,
               vocab_file=conv["vocab_file"])
    return tf.saved_model.load(str(out))


@pytest.fixture(scope="module")
def reference(paddle_baike_fixtures):
    sentences = (paddle_baike_fixtures / "sentences.txt").read_text(
        "utf-8").splitlines()
    with np.load(paddle_baike_fixtures / "reference.npz") as f:
        return sentences, dict(f)


def _assert_paddles(out, sentences, ref):
    for i, sentence in enumerate(sentences):
        n = len(sentence.split())
        words = slice(1, n + 1)
        assert int(out["sequence_len"][i]) == n
        np.testing.assert_allclose(out["word_emb"][i, :n],
                                   ref[f"s{i}_embedding"][words],
                                   rtol=0, atol=ATOL)
        for layer in (1, 2):
            got = out[f"lstm_outputs{layer}"][i, :n].numpy()
            np.testing.assert_allclose(got[:, :8],
                                       ref[f"s{i}_fw_{layer}"][words],
                                       rtol=0, atol=ATOL)
            np.testing.assert_allclose(got[:, 8:],
                                       ref[f"s{i}_bw_{layer}"][::-1][words],
                                       rtol=0, atol=ATOL)


@pytest.mark.slow
def test_default_signature_reproduces_paddle(exported, reference):
    sentences, ref = reference
    out = exported.signatures["default"](strings=tf.constant(sentences))
    _assert_paddles(out, sentences, ref)


@pytest.mark.slow
def test_tokens_and_elmo_signatures(exported, reference,
                                    paddle_baike_converted):
    sentences, ref = reference
    split = [s.split() for s in sentences]
    width = max(len(s) for s in split)
    tokens = tf.constant([s + [""] * (width - len(s)) for s in split])
    lengths = tf.constant([len(s) for s in split], tf.int32)
    out = exported.signatures["tokens"](tokens=tokens, sequence_len=lengths)
    _assert_paddles(out, sentences, ref)
    ids = TokenBatcher(paddle_baike_converted["vocab_file"]).batch_sentences(
        split)
    out = exported.signatures["elmo"](
        char_ids=tf.constant(ids[..., None], tf.int32))
    _assert_paddles(out, sentences, ref)


@pytest.mark.slow
def test_an_id_past_the_vocabulary_is_refused(exported):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"expected values < 36 \(TokenBatcher"):
        exported.signatures["elmo"](
            char_ids=tf.constant([[[1], [36], [2]]], tf.int32))


def test_without_the_vocabulary_nothing_is_written(paddle_baike_converted,
                                                   tmp_path):
    conv = paddle_baike_converted
    with pytest.raises(ExportError,
                       match=r"options\.json: a word-input model \(no "
                             r"'char_cnn' section\) needs its vocabulary"):
        export_hub(options_file=conv["options_file"],
                   weight_file=conv["weight_file"], outdir=tmp_path / "o")
    short = tmp_path / "vocab.txt"
    lines = open(conv["vocab_file"], encoding="utf-8").read().splitlines()
    short.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(ExportError,
                       match=r"vocab\.txt: expected 35 words \(n_tokens_vocab "
                             r"of .*options\.json\), found 34"):
        export_hub(options_file=conv["options_file"],
                   weight_file=conv["weight_file"], outdir=tmp_path / "o",
                   vocab_file=short)
    assert not (tmp_path / "o").exists()
