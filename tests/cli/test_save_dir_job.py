"""``test``, ``dump-weights`` and ``export-hub --save_dir`` ask once what
wrote ``--save_dir``: their checks carry the answer
on the job to the library call, and leave ``args`` as given. (``train``'s
``--init_checkpoint``: tests/cli/test_train_job.py.)"""

import pathlib
import sys

import pytest

from helpers import counted_calls

from bilm_keras import cli
from bilm_keras.weights import model_detection

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
BILM_TF_SAVE_DIR = FIXTURES / "bilm_tf_run" / "save_dir"
PADDLENLP_RUN = FIXTURES / "paddlenlp_elmo" / "checkpoints"
#: each save_dir, its vocabulary and heldout text, and the checkpoint read
SAVE_DIRS = {
    "bilm-tf": (BILM_TF_SAVE_DIR, FIXTURES / "bilm_tf_run" / "vocab.txt",
                FIXTURES / "bilm_tf_run" / "heldout.txt",
                BILM_TF_SAVE_DIR / "model.ckpt-40"),
    "PaddleNLP": (PADDLENLP_RUN, FIXTURES / "paddlenlp_elmo" / "vocab.txt",
                  FIXTURES / "paddlenlp_elmo" / "heldout.txt",
                  PADDLENLP_RUN / "final.pdparams"),
}


def _detections(monkeypatch) -> list:
    """The paths detected, one per detection, however the caller imported
    ``detect_model``: each detection looks at its path once."""
    return counted_calls(monkeypatch, model_detection, "_detect")


def _argv(command: str, family: str, out: pathlib.Path) -> list:
    save_dir, vocab, heldout, _ = SAVE_DIRS[family]
    return {
        "test": ["test", "--save_dir", str(save_dir), "--vocab_file",
                 str(vocab), "--test_prefix", str(heldout)],
        "dump-weights": ["dump-weights", "--save_dir", str(save_dir),
                         "--outfile", str(out / "lm_weights.hdf5")],
        "export-hub": ["export-hub", "--save_dir", str(save_dir),
                       "--outdir", str(out / "hub")],
    }[command]


@pytest.mark.parametrize("family", sorted(SAVE_DIRS))
@pytest.mark.parametrize("command", ["test", "dump-weights", "export-hub"])
def test_the_check_carries_the_family(command, family, tmp_path,
                                      monkeypatch):
    calls = _detections(monkeypatch)
    args = cli.parse_args(_argv(command, family, tmp_path))
    flags, before = dict(vars(args)), set(sys.modules)
    job = args._command.check(args)
    assert not {m for m in set(sys.modules) - before
                if m.split(".")[0] in ("tensorflow", "keras")}
    save_dir = str(SAVE_DIRS[family][0])
    assert calls == [save_dir]
    model = (job.save_dir_model if command == "export-hub" else job.model)
    assert model.given == save_dir
    assert model.is_paddle == (family == "PaddleNLP")
    assert job.args is args and vars(args) == flags
    assert not (tmp_path / "hub").exists()


@pytest.mark.parametrize("family", sorted(SAVE_DIRS))
@pytest.mark.parametrize("command", [
    "dump-weights",
    pytest.param("test", marks=pytest.mark.slow),  # an evaluation (~1 s)
    pytest.param("export-hub", marks=pytest.mark.slow),  # an export (~3 s)
])
def test_a_command_detects_the_family_once(command, family, tmp_path,
                                           monkeypatch, capsys):
    # before, the check asked, then the library call again (export-hub:
    # then dump_weights a third time)
    calls = _detections(monkeypatch)
    result = cli.run(_argv(command, family, tmp_path))
    assert calls == [str(SAVE_DIRS[family][0])]
    if command == "export-hub":
        assert (tmp_path / "hub" / "saved_model.pb").is_file()
    else:
        assert result["checkpoint"] == str(SAVE_DIRS[family][3])
