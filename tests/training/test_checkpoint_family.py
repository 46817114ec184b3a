"""Which family of trained biLM a path names: told from file names alone,
once per run, whatever asks (``train --init_checkpoint``'s checks, its
options, the training: tests/cli/test_train_job.py)."""

import pathlib

import pytest

from helpers import counted_calls

from bilm_keras.training import checkpoint_family
from bilm_keras.training.checkpoint_family import (
    CHECKPOINT_FAMILIES,
    PADDLE_FLUID,
    PADDLENLP,
    TENSORFLOW_SAVE_DIR,
    detect_checkpoint,
)
from bilm_keras.training.training_run import TrainingRun
from bilm_keras.weights.paddle_conversion import paddle_options
from bilm_keras.weights.paddle_model import PaddleFormatError

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
PADDLENLP_RUN = FIXTURES / "paddlenlp_elmo" / "checkpoints"
BAIKE = FIXTURES / "paddle_baike" / "checkpoint"
BILM_TF_RUN = FIXTURES / "bilm_tf_run"
DEEPPAVLOV = FIXTURES / "deeppavlov_lm" / "elmo-lm-ready4fine-tuning"


@pytest.mark.parametrize("path,family,located", [
    (PADDLENLP_RUN, PADDLENLP, PADDLENLP_RUN / "final.pdparams"),
    (PADDLENLP_RUN / "final", PADDLENLP, PADDLENLP_RUN / "final.pdparams"),
    (BAIKE, PADDLE_FLUID, BAIKE),
    (BILM_TF_RUN / "save_dir", TENSORFLOW_SAVE_DIR,
     BILM_TF_RUN / "save_dir"),
    (BILM_TF_RUN / "save_dir_tf12", TENSORFLOW_SAVE_DIR,
     BILM_TF_RUN / "save_dir_tf12"),
    (DEEPPAVLOV, TENSORFLOW_SAVE_DIR, DEEPPAVLOV),  # its saves/ read later
])
def test_each_family_is_told_from_its_files(path, family, located):
    found = detect_checkpoint(path)
    assert (found.family, found.path, found.given) == (
        family, str(located), str(path))


def test_no_family_for_what_is_no_checkpoint(tmp_path):
    assert detect_checkpoint(tmp_path / "nowhere") is None
    text = tmp_path / "notes.txt"
    text.write_text("not a checkpoint\n")
    assert detect_checkpoint(text) is None
    # several .pdparams, none final or a step: which one is for the user
    for name in ("a.pdparams", "b.pdparams"):
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(PaddleFormatError, match="name the file"):
        detect_checkpoint(tmp_path)


def test_the_options_come_from_the_family():
    save_dir = detect_checkpoint(BILM_TF_RUN / "save_dir")
    assert save_dir.options_file == str(BILM_TF_RUN / "save_dir" /
                                        "options.json")
    paddle = detect_checkpoint(PADDLENLP_RUN)
    assert paddle.options_file is None
    assert paddle.converted_options() == paddle_options(
        PADDLENLP_RUN / "final.pdparams")


def test_a_save_dir_is_the_last_family_tried():
    # a Paddle run's save_dir is a folder too: the Paddle rows come first
    assert CHECKPOINT_FAMILIES[-1] is TENSORFLOW_SAVE_DIR


def test_a_run_detects_its_init_checkpoint_once(monkeypatch, tmp_path):
    calls = counted_calls(monkeypatch, checkpoint_family,
                          "detect_checkpoint")
    run = TrainingRun(train_prefix="data/*.txt", vocab_file="vocab.txt",
                      save_dir=str(tmp_path), init_checkpoint=PADDLENLP_RUN)
    assert run.located_init_checkpoint is run.located_init_checkpoint
    assert calls == [str(PADDLENLP_RUN)]
    # a changed run is another value: asked again
    other = run.replace(init_checkpoint=str(BAIKE))
    assert other.located_init_checkpoint.family is PADDLE_FLUID
    assert run.replace(init_checkpoint=None).located_init_checkpoint is None
    assert len(calls) == 2
