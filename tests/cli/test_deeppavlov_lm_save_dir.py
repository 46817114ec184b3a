"""DeepPavlov's LM-ready checkpoint (``tests/fixtures/deeppavlov_lm``,
written by DeepPavlov's own training graph from the weights of bilm-tf's
fixture run) through each command that takes a save_dir: its
``options.json`` and ``vocab.txt`` beside ``saves/model``. Every figure is
bilm-tf's fixture run's: its ``dump_weights`` file and its recorded
``run_test.py`` perplexity."""

import json
import logging
import pathlib
import shutil

import numpy as np
import pytest

from bilm_keras import cli
from helpers import hdf5_datasets

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
LM = FIXTURES / "deeppavlov_lm" / "elmo-lm-ready4fine-tuning"
RUN = FIXTURES / "bilm_tf_run"
RECORDED = json.loads((RUN / "perplexities.json").read_text())["by_batch_size"]
HELDOUT = str(RUN / "heldout.txt")


def test_the_checkpoint_is_found_in_saves_with_tf15_names(caplog):
    from bilm_keras.weights.model_detection import (
        TF1_CHECKPOINT,
        detect_model,
    )
    from bilm_keras.weights.bilm_tf_names import TF_1_5

    with caplog.at_level(logging.INFO):
        detected = detect_model(LM)
    assert detected.family == TF1_CHECKPOINT and detected.deeppavlov
    found = detected.run_checkpoint
    assert found.path == str(LM / "saves" / "model")
    assert (found.kind, found.generation) == (TF1_CHECKPOINT, TF_1_5)
    assert found.global_step == 40
    # DeepPavlov's graph: every weight with its Adagrad slot
    assert "lm/softmax/W/Adagrad" in found.shapes
    assert "train_perplexity" in found.shapes
    [line] = [r.getMessage() for r in caplog.records
              if "DeepPavlov" in r.getMessage()]
    assert line == (f"{LM}: reading the checkpoint in {LM / 'saves'}, beside "
                    "options.json as DeepPavlov's ELMo saves it")


def test_dump_weights_is_bilm_tfs_dump(tmp_path):
    out = tmp_path / "model" / "lm_weights.hdf5"
    assert cli.main(["dump-weights", "--save_dir", str(LM),
                     "--outfile", str(out)]) == 0
    ours, theirs = hdf5_datasets(out), hdf5_datasets(RUN / "lm_weights.hdf5")
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert np.array_equal(ours[name], value), name
    options = json.loads((out.parent / "options.json").read_text())
    assert options["char_cnn"]["n_characters"] == 262


@pytest.mark.slow  # an evaluation, states carried (~3 s)
def test_stateful_test_is_bilm_tfs_run_test(capsys):
    result = cli.run(["test", "--save_dir", str(LM), "--vocab_file",
                      str(LM / "vocab.txt"), "--test_prefix", HELDOUT,
                      "--batch_size", "4", "--stateful"])
    recorded = RECORDED["4"]
    assert result["stateful"].n_batches == recorded["n_batches"]
    assert result["stateful"].perplexity == pytest.approx(
        recorded["perplexity"], rel=1e-6)
    assert f"checkpoint: {LM / 'saves' / 'model'}" in (
        capsys.readouterr().out.splitlines())


def _train(save_dir, init_checkpoint, vocab):
    return cli.run(["train", "--save_dir", str(save_dir),
                    "--init_checkpoint", str(init_checkpoint),
                    "--init_vocab_file", str(vocab), "--vocab_file",
                    str(vocab), "--train_prefix", HELDOUT, "--max_steps",
                    "1", "--seed", "0", "--log_every", "1"])


@pytest.mark.nightly
@pytest.mark.slow  # two runs of one training step (~10 s)
def test_train_from_it_is_training_from_bilm_tfs_run(tmp_path, capsys):
    import tensorflow as tf

    ours = _train(tmp_path / "from_deeppavlov", LM, LM / "vocab.txt")
    out = capsys.readouterr().out
    assert (f"softmax: kept whole from {LM / 'saves' / 'model'} "
            "(the same vocabulary)") in out, out
    assert ours["step"] == 1
    # bilm-tf's own save_dir of the same weights trains to the same state
    _train(tmp_path / "from_bilm_tf", RUN / "save_dir", RUN / "vocab.txt")
    a = tf.train.load_checkpoint(str(tmp_path / "from_deeppavlov" /
                                     "model-1"))
    b = tf.train.load_checkpoint(str(tmp_path / "from_bilm_tf" / "model-1"))
    names = sorted(a.get_variable_to_shape_map())
    assert names == sorted(b.get_variable_to_shape_map())
    weights = [n for n in names if n.startswith("weights/")]
    assert len(weights) > 30
    for name in weights:
        assert np.array_equal(a.get_tensor(name), b.get_tensor(name)), name
    # and that state is one Adagrad step from bilm-tf's weights
    key = ("weights/language_model:bilm:char_cnn:projection_kernel/"
           ".ATTRIBUTES/VARIABLE_VALUE")
    start = hdf5_datasets(RUN / "lm_weights.hdf5")["CNN_proj/W_proj"]
    moved = np.abs(a.get_tensor(key) - start)
    assert 0 < moved.max() < 0.3


def test_an_index_without_its_data_is_one_line(tmp_path, capsys):
    lm = tmp_path / "lm"
    shutil.copytree(LM, lm)
    (lm / "saves" / "model.data-00000-of-00001").unlink()
    out = tmp_path / "out" / "lm_weights.hdf5"
    assert cli.main(["dump-weights", "--save_dir", str(lm),
                     "--outfile", str(out)]) == cli.EXIT_BAD_INPUT
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("bilm-keras dump-weights: error: "), line
    assert ("model.data-00000-of-00001: missing (the checkpoint's values; "
            "model.index is there without them)") in line, line
    assert not out.parent.exists()
