"""A PaddleNLP ``.pdparams`` exported as a SavedModel straight from the
file (``export-hub --save_dir FILE``): its ``default`` signature gives
PaddleNLP's ``ELMoEmbedder.encode`` layers (tests/fixtures/paddlenlp_elmo)
to 1e-5 (slow: an export and its SavedModel)."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import cli

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / \
    "paddlenlp_elmo"
ATOL = 1e-5


@pytest.mark.slow
def test_export_hub_from_a_pdparams_reproduces_encode(tmp_path, capsys):
    out = tmp_path / "hub"
    assert cli.main(["export-hub", "--save_dir",
                     str(FIXTURES / "elmo.pdparams"), "--outdir",
                     str(out)]) == 0, capsys.readouterr().err
    module = tf.saved_model.load(str(out))
    sentences = (FIXTURES / "sentences.txt").read_text(
        "utf-8").splitlines()
    got = module.signatures["default"](strings=tf.constant(sentences))
    with np.load(FIXTURES / "embeddings.npz") as f:
        expected = dict(f)
    for i, sentence in enumerate(sentences):
        n = len(sentence.split())
        ref = expected[f"sentence_{i}"]  # (3, n, 2P): [emb, emb], ...
        p = ref.shape[-1] // 2
        assert int(got["sequence_len"][i]) == n
        np.testing.assert_allclose(got["word_emb"][i, :n], ref[0, :, :p],
                                   rtol=0, atol=ATOL)
        for layer in (1, 2):
            np.testing.assert_allclose(got[f"lstm_outputs{layer}"][i, :n],
                                       ref[layer], rtol=0, atol=ATOL)
