"""A PaddleNLP run's checkpoint where a ``--save_dir`` is taken: ``test``
gives PaddleNLP's own ``run_eval.py`` perplexities
(tests/fixtures/paddlenlp_elmo/eval.json), ``dump-weights`` the weights
``convert-paddle`` writes.

PaddleNLP's ``OneBillionWordDataset`` cuts the heldout text into the same
per-row streams as bilm-tf's ``LMDataset``, and both carry the LSTM states
from batch to batch; with one row, and a text of 50 positions that its
5-step windows use whole, its figure is bilm-tf's ``run_test.py`` figure
(one step a batch): ``test --stateful``'s. Plain ``test`` starts each
sentence from zero states, at every batch size."""

import json
import math
import pathlib

import h5py
import numpy as np
import pytest

from bilm_keras import cli
from bilm_keras.options import BiLMOptions
from bilm_keras.training.stateful_evaluation import evaluate_stateful
from bilm_keras.weights.paddle_conversion import convert_paddle
from bilm_keras.weights.model_detection import detect_model
from bilm_keras.weights.paddle_model import PaddleFormatError
from helpers import assert_plain_test_figures

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / \
    "paddlenlp_elmo"
RUN = FIXTURES / "checkpoints"
VOCAB = FIXTURES / "vocab.txt"


def _expected(batch_size=1):
    return json.loads((FIXTURES / "eval.json").read_text())[
        f"batch_size_{batch_size}"]


def test_a_paddlenlp_save_dir_is_found_as_its_scripts_name_it():
    final = str(RUN / "final.pdparams")
    for path in (RUN, RUN / "final", final):
        assert detect_model(path).checkpoint == final
    assert detect_model(RUN / "1").checkpoint == str(RUN / "1.pdparams")
    assert not detect_model(FIXTURES.parent / "bilm_tf_run" /
                            "save_dir").is_paddle


@pytest.mark.slow  # the quick tier has the softmax's log-probabilities
def test_run_eval_perplexity_reproduced():
    result = evaluate_stateful(save_dir=str(RUN), vocab_file=str(VOCAB),
                               test_prefix=str(FIXTURES / "heldout.txt"),
                               batch_size=1)
    expected = _expected()
    assert result.n_tokens == expected["batches"] * expected["unroll_steps"]
    np.testing.assert_allclose(result.perplexity,
                               expected["average_perplexity"], rtol=1e-5)
    for direction in ("forward", "backward"):
        np.testing.assert_allclose(
            result.direction_perplexities[direction],
            expected[f"{direction}_perplexity"], rtol=1e-5)


@pytest.mark.slow  # test_run_eval_perplexity_reproduced has the numbers
def test_cli_test_and_dump_weights(tmp_path, capsys):
    assert cli.main(["test", "--save_dir", str(RUN / "final.pdparams"),
                     "--vocab_file", str(VOCAB), "--test_prefix",
                     str(FIXTURES / "heldout.txt"), "--batch_size", "1",
                     "--stateful"]) == 0
    out = capsys.readouterr().out
    assert f"checkpoint: {RUN / 'final.pdparams'}" in out
    expected = _expected()
    assert (f"bilm-tf's run_test.py perplexity: "
            f"{expected['average_perplexity']:.3f}") in out

    outfile = tmp_path / "dump" / "lm_weights.hdf5"
    assert cli.main(["dump-weights", "--save_dir", str(RUN), "--outfile",
                     str(outfile)]) == 0
    convert_paddle(RUN / "final.pdparams", tmp_path / "converted",
                   vocab_file=VOCAB)
    with h5py.File(outfile, "r") as a, \
            h5py.File(tmp_path / "converted" / "lm_weights.hdf5", "r") as b:
        names = []
        b.visit(lambda n: names.append(n)
                if isinstance(b[n], h5py.Dataset) else None)
        for name in names:
            np.testing.assert_array_equal(a[name][...], b[name][...])
    assert BiLMOptions.from_json(outfile.parent / "options.json") == \
        BiLMOptions.from_json(tmp_path / "converted" / "options.json")


@pytest.mark.slow  # three traces of the model
def test_plain_test_is_each_sentence_from_zero_states():
    """The converted options carry the states across sentences (PaddleNLP's
    training), yet ``test`` without ``--stateful`` starts each sentence
    from zero states: PaddleNLP's own log-probabilities of the pre-train
    model (log_probs.npz, one zero-state batch) at every batch size."""
    n = len((FIXTURES / "sentences.txt").read_text("utf-8").splitlines())
    with np.load(FIXTURES / "log_probs.npz") as ref:
        expected = {d: math.exp(-np.mean(np.concatenate(
            [ref[f"{d}_{i}"] for i in range(n)])))
            for d in ("forward", "backward")}
    assert_plain_test_figures(FIXTURES / "elmo.pdparams", VOCAB,
                              FIXTURES / "sentences.txt", n_tokens=40,
                              perplexities=expected)


def test_a_bad_paddle_save_dir_is_one_line(tmp_path, capsys):
    run = tmp_path / "checkpoints"
    run.mkdir()
    for name in ("a.pdparams", "b.pdparams"):
        (run / name).write_bytes(b"")
    with pytest.raises(PaddleFormatError,
                       match=r"expected final\.pdparams or STEP\.pdparams"):
        detect_model(run)
    assert cli.main(["test", "--save_dir", str(run), "--vocab_file",
                     str(VOCAB), "--test_prefix",
                     str(FIXTURES / "heldout.txt")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "expected final.pdparams or STEP.pdparams" in err


# --------------------------------------- train --init_checkpoint from Paddle
def test_init_vocab_file_is_paddlenlps_own(tmp_path, capsys):
    # --init_vocab_file is PaddleNLP's words-only file: its rows are the
    # words' ids after PaddleNLP's four specials
    from bilm_keras.data.vocabulary import Vocabulary
    from bilm_keras.models.language_model import LanguageModel
    from bilm_keras.training.paddle_adaptation import keep_paddle_softmax
    from bilm_keras.weights.paddlenlp_elmo import read_paddlenlp

    paddle_model = read_paddlenlp(RUN / "final.pdparams")
    assert paddle_model.vocab is None  # none given: the file's words only
    words = ["<S>", "</S>", "<UNK>", "北京", "新词", "的"]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("".join(w + "\n" for w in words), encoding="utf-8")
    options = BiLMOptions.from_dict(
        dict(paddle_model.options, n_tokens_vocab=len(words)))
    lm = LanguageModel.from_options(options, training=False).build_all()
    new_rows, old_rows = keep_paddle_softmax(
        lm, paddle_model, vocab=Vocabulary(vocab_file),
        vocab_file=str(vocab_file), init_vocab_file=str(VOCAB))
    assert len(new_rows) == 5  # all but 新词
    paddle_ids = {"<UNK>": 0, "<S>": 1, "</S>": 2}
    paddle_ids.update({w: 4 + i for i, w in enumerate(
        VOCAB.read_text("utf-8").split())})
    W, b = lm.softmax.W.numpy(), lm.softmax.b.numpy()
    for row, word in enumerate(words):
        if word != "新词":
            old = paddle_ids[word]
            np.testing.assert_array_equal(W[row],
                                          paddle_model.softmax_weight[old])
            assert b[row] == paddle_model.softmax_bias[old]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_init_checkpoint_takes_the_checkpoints_options(tmp_path, capsys):
    """Without --options the run takes the checkpoint's converted options
    (as a bilm-tf save_dir's options.json), and Paddle's Adagrad state
    from the .pdopt beside the .pdparams."""
    corpus = tmp_path / "train.txt"
    corpus.write_text("我们 今天 在 北京 。\n" * 4, encoding="utf-8")
    paddle_model = read_paddlenlp_model()
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("".join(w + "\n" for w in paddle_model.vocab),
                          encoding="utf-8")
    code = cli.main(["train", "--train_prefix", str(corpus), "--vocab_file",
                     str(vocab_file), "--save_dir", str(tmp_path / "run"),
                     "--init_checkpoint", str(RUN / "final.pdparams"),
                     "--init_vocab_file", str(VOCAB), "--batch_size", "1",
                     "--max_steps", "1", "--n_gpus", "0"])
    assert code == 0, capsys.readouterr().err
    assert BiLMOptions.from_json(tmp_path / "run" / "options.json").lstm == \
        BiLMOptions.from_dict(paddle_model.options).lstm


def read_paddlenlp_model():
    from bilm_keras.weights.paddlenlp_elmo import read_paddlenlp

    return read_paddlenlp(RUN / "final.pdparams", vocab_file=VOCAB)
