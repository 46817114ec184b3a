"""``bilm-keras train`` builds one frozen job: its checks ask once which
family of checkpoint ``--init_checkpoint`` is, carry the options they
parsed, and leave ``args`` as given."""

import pathlib
import sys

from helpers import counted_calls

from bilm_keras import cli
from bilm_keras.weights import model_detection
from bilm_keras.weights.model_detection import PADDLENLP
from bilm_keras.weights.paddle_conversion import paddle_options

PADDLENLP_RUN = (pathlib.Path(__file__).resolve().parents[1] / "fixtures"
                 / "paddlenlp_elmo" / "checkpoints")


def test_train_checks_a_paddle_checkpoint_once(monkeypatch, tmp_path):
    calls = counted_calls(monkeypatch, model_detection, "detect_model")
    corpus = tmp_path / "train.txt"
    corpus.write_text("我们 今天 在 北京 。\n", encoding="utf-8")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("<S>\n</S>\n<UNK>\n我们\n", encoding="utf-8")
    args = cli.parse_args([
        "train", "--train_prefix", str(corpus), "--vocab_file", str(vocab),
        "--save_dir", str(tmp_path / "run"),
        "--init_checkpoint", str(PADDLENLP_RUN)])
    flags, before = dict(vars(args)), set(sys.modules)
    job = args._command.check(args)
    assert not {m for m in set(sys.modules) - before
                if m.split(".")[0] in ("tensorflow", "keras")}
    assert calls == [str(PADDLENLP_RUN)]
    # the job carries the checkpoint's converted options, its epoch
    # counted from this corpus, and the run as detected
    assert job.options.lstm.dim == paddle_options(
        PADDLENLP_RUN / "final.pdparams")["lstm"]["dim"]
    assert job.options.n_train_tokens is None
    assert job.run.init_model.family == PADDLENLP
    assert vars(args) == flags
    assert not (tmp_path / "run").exists()
