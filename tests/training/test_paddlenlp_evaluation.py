"""A PaddleNLP run's checkpoint evaluated here gives PaddleNLP's own
``run_eval.py`` perplexities (tests/fixtures/paddlenlp_elmo/eval.json):
the converted biLM with PaddleNLP's softmax, over the same heldout text,
with states carried across the stream as both carry them.

PaddleNLP's ``OneBillionWordDataset`` cuts the heldout text into the same
per-row streams as bilm-tf's ``LMDataset``; with one row, and a text of 50
positions that its 5-step windows use whole, its figure is bilm-tf's
``run_test.py`` figure (one step a batch), which
``stateful_heldout_perplexity`` computes."""

import json
import pathlib

import numpy as np
import pytest

from bilm_keras.models.language_model import LanguageModel
from bilm_keras.options import BiLMOptions
from bilm_keras.training.inputs import load_vocab
from bilm_keras.training.stateful_evaluation import (
    stateful_heldout_perplexity,
)
from bilm_keras.weights.bilm_tf_checkpoint import assign_bilm_tf_checkpoint
from bilm_keras.weights.paddle_checkpoint import read_paddle_checkpoint
from bilm_keras.weights.paddlenlp_elmo import read_paddlenlp

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / \
    "paddlenlp_elmo"
CHECKPOINT = FIXTURES / "checkpoints" / "final.pdparams"


@pytest.mark.slow  # the quick tier has the softmax's log-probabilities
def test_run_eval_perplexity_reproduced(tmp_path):
    paddle_model = read_paddlenlp(CHECKPOINT,
                                  vocab_file=FIXTURES / "vocab.txt")
    options = BiLMOptions.from_dict(paddle_model.options)
    lm = LanguageModel.from_options(options, training=False).build_all()
    assign_bilm_tf_checkpoint(read_paddle_checkpoint(
        paddle_model, lm.backbone, softmax=lm.softmax))
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("".join(w + "\n" for w in paddle_model.vocab),
                          encoding="utf-8")

    result = stateful_heldout_perplexity(
        lm, load_vocab(str(vocab_file), options),
        str(FIXTURES / "heldout.txt"), batch_size=1, bidirectional=True)
    expected = json.loads((FIXTURES / "eval.json").read_text())[
        "batch_size_1"]
    assert result.n_tokens == expected["batches"] * expected["unroll_steps"]
    np.testing.assert_allclose(result.perplexity,
                               expected["average_perplexity"], rtol=1e-5)
    for direction in ("forward", "backward"):
        np.testing.assert_allclose(
            result.direction_perplexities[direction],
            expected[f"{direction}_perplexity"], rtol=1e-5)
