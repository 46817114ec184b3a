"""A save_dir after a short run (one epoch, 6 steps): the dumped HDF5 gives
the trained embeddings, and train/restart/evaluate refuse what does not fit
it.

The quick tier's copy of ``test_train.py``'s checks on its fully trained
char model (300 steps, in the slow tier): the same calls and messages on a
model that is cheap to train.
"""

import json
import os

import h5py
import numpy as np
import pytest
from helpers import fixture_options

from bilm_keras import Batcher, BidirectionalLanguageModel
from bilm_keras.options import BiLMOptions
from bilm_keras.training import (
    CheckpointError,
    evaluate,
    TrainingRun,
    restart,
    train,
)
from bilm_keras.save_dirs import dump_weights, load_trained_model

SENTENCES = [["the", "language", "models", "are", "neural", "."],
             ["words", "of", "the", "vocabulary"]]


def _train(train_dir, save_dir):
    return train(fixture_options(use_chars=True, n_epochs=1), TrainingRun(
        train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), save_dir=str(save_dir),
        seed=1, log_every=1000))


@pytest.fixture(scope="module")
def save_dir(short_char_run):
    """A bidirectional char-CNN model trained for one epoch (conftest's,
    shared with test_evaluate_vs_numpy)."""
    save_dir, result = short_char_run
    assert result["step"] == 134 // 20
    return save_dir


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_dump_round_trip_gives_the_trained_embeddings(save_dir, tmp_path):
    out = dump_weights(str(save_dir), str(tmp_path / "lm_weights.hdf5"))
    options = BiLMOptions.from_json(out["options_file"])
    assert options.char_cnn.n_characters == 262
    with h5py.File(out["weight_file"]) as f:
        assert f["char_embed"].shape == (261, 4)
        assert "softmax" not in f and "softmax/W" not in f
    _, lm, _ = load_trained_model(str(save_dir))
    ids = Batcher(None, 10).batch_sentences(SENTENCES)
    trained = BidirectionalLanguageModel.from_backbone(lm.backbone)(ids)
    loaded = BidirectionalLanguageModel(out["options_file"],
                                        out["weight_file"])(ids)
    mask = trained["mask"].numpy()
    np.testing.assert_allclose(
        loaded["lm_embeddings"].numpy().transpose(0, 2, 1, 3)[mask],
        trained["lm_embeddings"].numpy().transpose(0, 2, 1, 3)[mask],
        atol=1e-5,
    )


@pytest.mark.slow
def test_options_that_do_not_fit_the_checkpoint(train_dir, save_dir,
                                                tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in os.listdir(save_dir):
        if os.path.isfile(save_dir / name):
            (bad / name).write_bytes((save_dir / name).read_bytes())
    options = json.loads((bad / "options.json").read_text())
    options["lstm"]["dim"] = 24
    (bad / "options.json").write_text(json.dumps(options))
    with pytest.raises(CheckpointError,
                       match=r"options.json does not fit checkpoint .*"
                             r"cell0/kernel_t: options give shape \(96, 16\)"
                             r", checkpoint has \(64, 16\)"):
        evaluate(save_dir=str(bad), vocab_file=str(train_dir / "vocab.txt"),
                 test_prefix=str(train_dir / "data.txt"))


# builds conftest's short_char_run, a training run (7-11 s on the AVX2
# EPYC), which no other quick test needs
@pytest.mark.slow
def test_checkpoint_of_the_tf1_kernel_layout(train_dir, save_dir,
                                             monkeypatch):
    # a checkpoint written before the cells held their kernels transposed
    # lists .../kernel (TF1's shape) where the model has .../kernel_t
    from bilm_keras.training import checkpoints

    real = checkpoints.tf.train.list_variables

    def as_written_before(path):
        return [(name.replace("kernel_t/", "kernel/"),
                 shape[::-1] if "kernel_t/" in name else shape)
                for name, shape in real(path)]

    monkeypatch.setattr(checkpoints.tf.train, "list_variables",
                        as_written_before)
    with pytest.raises(CheckpointError,
                       match=r"model-\d+: written before 2026-11-24, when the "
                             r"LSTM cells held bilm-tf's kernel layout "
                             r"\(.*cell0/kernel; now kernel_t"):
        evaluate(save_dir=str(save_dir),
                 vocab_file=str(train_dir / "vocab.txt"),
                 test_prefix=str(train_dir / "data.txt"))


def test_restart_with_a_vocab_of_another_size(train_dir, save_dir,
                                              tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("<S>\n</S>\n<UNK>\nthe\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"n_tokens_vocab.*expected 4.*"
                                         r"found 32"):
        restart(TrainingRun(
            save_dir=str(save_dir), vocab_file=str(vocab),
            train_prefix=str(train_dir / "data.txt")))


def test_train_refuses_a_save_dir_with_a_checkpoint(train_dir, save_dir):
    with pytest.raises(CheckpointError, match="restart.py"):
        _train(train_dir, save_dir)
