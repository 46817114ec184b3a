"""What wrote a model's files: one answer for every family, from file
names and a checkpoint's index alone (no TensorFlow), computed once per
run (``train --init_checkpoint``: tests/cli/test_train_job.py)."""

import pathlib
import subprocess
import sys

import pytest

from helpers import counted_calls

from bilm_keras.training.training_run import TrainingRun
from bilm_keras.weights import model_detection
from bilm_keras.weights.bilm_tf_names import TF_1_2, TF_1_5
from bilm_keras.weights.model_detection import (
    BILM_TF,
    ELMOFORMANYLANGS,
    OUR_RUN,
    PADDLE_FLUID,
    PADDLENLP,
    TF1_CHECKPOINT,
    TFHUB_TF1,
    CheckpointFileError,
    ModelDetectionError,
    as_detected,
    detect_model,
    find_model,
)
from bilm_keras.weights.paddle_model import PaddleFormatError

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
PADDLENLP_RUN = FIXTURES / "paddlenlp_elmo" / "checkpoints"
BAIKE = FIXTURES / "paddle_baike" / "checkpoint"
BILM_TF_RUN = FIXTURES / "bilm_tf_run"
DEEPPAVLOV = FIXTURES / "deeppavlov_lm" / "elmo-lm-ready4fine-tuning"
MANYLANGS = FIXTURES / "elmoformanylangs" / "tiny.model"
MODEL = FIXTURES / "bilm-tf" / "model"
HUB = FIXTURES / "tfhub_modules" / "google"


@pytest.mark.parametrize("path,family,checkpoint", [
    (PADDLENLP_RUN, PADDLENLP, PADDLENLP_RUN / "final.pdparams"),
    (PADDLENLP_RUN / "final", PADDLENLP, PADDLENLP_RUN / "final.pdparams"),
    (PADDLENLP_RUN / "final.pdparams", PADDLENLP,
     PADDLENLP_RUN / "final.pdparams"),
    (BAIKE, PADDLE_FLUID, BAIKE),
    (MANYLANGS, ELMOFORMANYLANGS, None),
    (HUB, TFHUB_TF1, None),
    (MODEL, BILM_TF, None),
])
def test_each_family_is_told_from_its_files(path, family, checkpoint):
    found = detect_model(path)
    assert (found.family, found.given) == (family, str(path))
    assert found.checkpoint == (None if checkpoint is None
                                else str(checkpoint))
    assert found.is_paddle == (family in (PADDLENLP, PADDLE_FLUID))


@pytest.mark.parametrize("sub,generation", [("save_dir", TF_1_5),
                                            ("save_dir_tf12", TF_1_2)])
def test_bilm_tf_runs_of_either_generation(sub, generation):
    found = detect_model(BILM_TF_RUN / sub)
    assert found.family == TF1_CHECKPOINT and found.is_run
    assert found.run_checkpoint.generation == generation
    assert found.run_checkpoint.path == str(BILM_TF_RUN / sub /
                                            "model.ckpt-40")
    assert found.options_file == str(BILM_TF_RUN / sub / "options.json")
    assert not found.deeppavlov


def test_deeppavlov_keeps_its_checkpoint_in_saves():
    found = detect_model(DEEPPAVLOV)
    assert found.family == TF1_CHECKPOINT and found.deeppavlov
    assert found.run_checkpoint.generation == TF_1_5


# builds conftest's short_char_run, a training run (7-11 s on the AVX2
# EPYC), which no other quick test needs
@pytest.mark.slow
def test_our_run_is_told_by_its_weights_part(short_char_run):
    save_dir, _ = short_char_run
    found = detect_model(save_dir)
    assert found.family == OUR_RUN and found.is_run
    assert found.run_checkpoint.generation is None
    assert any(name.startswith("weights/")
               for name in found.run_checkpoint.shapes)


def test_detection_imports_no_tensorflow():
    paths = [str(p) for p in (BILM_TF_RUN / "save_dir", DEEPPAVLOV,
                              PADDLENLP_RUN, MODEL)]
    code = ("import sys\n"
            "from bilm_keras.weights.model_detection import detect_model\n"
            f"for p in {paths!r}:\n"
            "    detect_model(p)\n"
            "print(sorted(m for m in sys.modules\n"
            "             if m.split('.')[0] in ('tensorflow', 'keras')))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         capture_output=True, text=True).stdout
    assert out.splitlines()[-1] == "[]"


def test_what_is_no_model(tmp_path):
    with pytest.raises(ModelDetectionError, match="nowhere: no such file"):
        detect_model(tmp_path / "nowhere")
    text = tmp_path / "notes.txt"
    text.write_text("not a checkpoint\n")
    with pytest.raises(ModelDetectionError, match=r"notes\.txt: expected "
                       r"a model \(.*\), found none \(contents: a file\)"):
        detect_model(text)
    # several .pdparams, none final or a step: which one is for the user
    for name in ("a.pdparams", "b.pdparams"):
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(PaddleFormatError, match="name the file"):
        detect_model(tmp_path)


def test_a_run_without_a_checkpoint(tmp_path):
    (tmp_path / "options.json").write_text('{"lstm": {}}')
    with pytest.raises(CheckpointFileError, match="no checkpoint found"):
        detect_model(tmp_path)


def test_find_model_looks_one_folder_down(tmp_path):
    assert find_model(FIXTURES / "bilm-tf").family == BILM_TF
    with pytest.raises(ModelDetectionError, match="expected one model, "
                       "found [0-9]+"):
        find_model(FIXTURES / "tfhub_modules")
    with pytest.raises(ModelDetectionError, match="found none"):
        find_model(tmp_path)


def test_a_detected_model_is_passed_on_as_it_is():
    found = detect_model(BILM_TF_RUN / "save_dir")
    assert as_detected(found) is found
    with pytest.raises(ValueError, match="checkpoint: expected None for a "
                       "model detected already"):
        as_detected(found, checkpoint="model.ckpt-40")


def test_a_run_detects_its_init_checkpoint_once(monkeypatch, tmp_path):
    calls = counted_calls(monkeypatch, model_detection, "detect_model")
    run = TrainingRun(train_prefix="data/*.txt", vocab_file="vocab.txt",
                      save_dir=str(tmp_path), init_checkpoint=PADDLENLP_RUN)
    assert run.init_model is run.init_model
    assert calls == [str(PADDLENLP_RUN)]
    # a changed run is another value: asked again
    other = run.replace(init_checkpoint=str(BAIKE))
    assert other.init_model.family == PADDLE_FLUID
    assert run.replace(init_checkpoint=None).init_model is None
    assert len(calls) == 2
