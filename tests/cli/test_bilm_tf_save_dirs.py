"""A save_dir of bilm-tf's own training (``tests/fixtures/bilm_tf_run``,
copied from the machine that trained it: its ``checkpoint`` file names
``/home/elmo/...``) through each command that takes ``--save_dir``:
``test`` (``--stateful``: bilm-tf's recorded ``run_test.py`` figures),
``dump-weights`` (bilm-tf's ``dump_weights`` file, bit for bit),
``export-hub`` and, for bad input, ``restart``. (``restart``'s run is
checked in ``tests/training/test_bilm_tf_restart.py``.)"""

import json
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import cli
from helpers import hdf5_datasets

RUN = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "bilm_tf_run"
RECORDED = json.loads((RUN / "perplexities.json").read_text())["by_batch_size"]
VOCAB = str(RUN / "vocab.txt")
HELDOUT = str(RUN / "heldout.txt")



def _tree(*roots):
    return {p: (p.stat().st_size, p.stat().st_mtime_ns)
            for root in roots for p in pathlib.Path(root).rglob("*")}


def _copy(tmp_path, sub="save_dir"):
    save_dir = tmp_path / sub
    shutil.copytree(RUN / sub, save_dir)
    return save_dir


# ----------------------------------------------------------- test --stateful
@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
@pytest.mark.parametrize("sub,batch_size", [
    ("save_dir", "4"),
    ("save_dir_tf12", "1"),
])
def test_stateful_reproduces_bilm_tfs_run_test(sub, batch_size, capsys):
    result = cli.run(["test", "--save_dir", str(RUN / sub),
                      "--vocab_file", VOCAB, "--test_prefix", HELDOUT,
                      "--batch_size", batch_size, "--stateful"])
    recorded = RECORDED[batch_size]
    figure = result["stateful"]
    assert figure.n_batches == recorded["n_batches"]
    assert figure.perplexity == pytest.approx(recorded["perplexity"],
                                              rel=1e-6)
    out = capsys.readouterr().out.splitlines()
    # ours first, unchanged; bilm-tf's beside it
    assert out[0] == f"checkpoint: {RUN / sub / 'model.ckpt-40'}"
    assert f"mean perplexity: {result['perplexity']:.3f}  (159 tokens)" in out
    assert out[-1].startswith(
        f"bilm-tf's run_test.py perplexity: {recorded['perplexity']:.3f}  "
        "(forward ")
    assert out[-1].endswith(
        f"states carried across sentences, {recorded['n_batches']} batches "
        f"of {batch_size} rows, unroll 1)")


@pytest.mark.slow  # two evaluations of a trained run (~8 s)
def test_default_test_is_unchanged(short_char_run, train_dir, capsys):
    # our save_dir: the default figures alone; --stateful adds bilm-tf's
    from bilm_keras.training.stateful_evaluation import evaluate_stateful

    save_dir = str(short_char_run[0])
    argv = ["test", "--save_dir", save_dir, "--vocab_file",
            str(train_dir / "vocab.txt"), "--test_prefix",
            str(train_dir / "data.txt"), "--batch_size", "2"]
    plain = cli.run(argv)
    assert "stateful" not in plain
    assert "run_test.py" not in capsys.readouterr().out
    both = cli.run(argv + ["--stateful"])
    for key in ("forward_perplexity", "backward_perplexity", "perplexity",
                "n_tokens"):
        assert both[key] == plain[key]
    alone = evaluate_stateful(save_dir=save_dir,
                              vocab_file=train_dir / "vocab.txt",
                              test_prefix=str(train_dir / "data.txt"),
                              batch_size=2)
    assert both["stateful"].perplexity == pytest.approx(alone.perplexity,
                                                        rel=1e-6)


# ------------------------------------------------------------- dump-weights
@pytest.mark.parametrize("sub", ["save_dir", pytest.param(
    "save_dir_tf12", marks=pytest.mark.slow)])
def test_dump_weights_is_bilm_tfs_dump(sub, tmp_path, capsys):
    out = tmp_path / "model" / "lm_weights.hdf5"
    assert cli.main(["dump-weights", "--save_dir", str(RUN / sub),
                     "--outfile", str(out)]) == 0
    ours, theirs = hdf5_datasets(out), hdf5_datasets(RUN / "lm_weights.hdf5")
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert ours[name].dtype == value.dtype == np.float32
        assert np.array_equal(ours[name], value), name
    # beside it: the options for prediction (bilm-tf's dump wrote none)
    options = json.loads((out.parent / "options.json").read_text())
    trained = json.loads((RUN / sub / "options.json").read_text())
    assert options["char_cnn"]["n_characters"] == 262
    options["char_cnn"]["n_characters"] = 261
    for key, value in trained.items():
        if isinstance(value, dict):
            for k, v in value.items():
                assert options[key][k] == v, (key, k)
        else:
            assert options[key] == value, key
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "lm_weights.hdf5", "options.json"]


# export-hub end to end on a save_dir, which tests/cli/test_save_dir_job.py
# also exports
@pytest.mark.nightly
@pytest.mark.slow
def test_export_hub_from_bilm_tfs_save_dir(tmp_path, capsys):
    from bilm_keras import Batcher, BidirectionalLanguageModel

    out = tmp_path / "hub"
    assert cli.main(["export-hub", "--save_dir", str(RUN / "save_dir"),
                     "--outdir", str(out)]) == 0
    module = tf.saved_model.load(str(out))
    sentences = ["the number of words increases .", "neural networks"]
    got = module.signatures["default"](strings=tf.constant(sentences))
    # bilm-tf's own dump, loaded by the HDF5 path
    options = json.loads((RUN / "save_dir" / "options.json").read_text())
    options["char_cnn"]["n_characters"] = 262
    (tmp_path / "options.json").write_text(json.dumps(options))
    bilm = BidirectionalLanguageModel(str(tmp_path / "options.json"),
                                      str(RUN / "lm_weights.hdf5"))
    ids = Batcher(None, 50).batch_sentences([s.split() for s in sentences])
    want = bilm(ids)["lm_embeddings"].numpy()
    for i in (1, 2):
        np.testing.assert_allclose(got[f"lstm_outputs{i}"].numpy(),
                                   want[:, i], atol=1e-5)


# -------------------------------------------------------------- bad input
def _fails(argv, *roots):
    """Runs a command that must fail: returns its one line; nothing in
    ``roots`` changed."""
    before = _tree(*roots)
    code = cli.main(argv)
    assert code == cli.EXIT_BAD_INPUT
    assert _tree(*roots) == before
    return code


def _commands(save_dir, out):
    return {
        "test": ["test", "--save_dir", str(save_dir), "--vocab_file", VOCAB,
                 "--test_prefix", HELDOUT],
        "dump-weights": ["dump-weights", "--save_dir", str(save_dir),
                         "--outfile", str(out / "lm_weights.hdf5")],
        "export-hub": ["export-hub", "--save_dir", str(save_dir),
                       "--outdir", str(out / "hub")],
        "restart": ["restart", "--save_dir", str(save_dir), "--vocab_file",
                    VOCAB, "--train_prefix", HELDOUT, "--max_steps", "1"],
    }


def _one_line(capsys, command):
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"bilm-keras {command}: error: "), line
    return line


@pytest.mark.parametrize("command", ["test", "dump-weights", "export-hub",
                                     "restart"])
def test_neither_ours_nor_bilm_tfs(command, tmp_path, capsys):
    save_dir = tmp_path / "other"
    tf.train.Checkpoint(encoder=tf.Variable([1.0]),
                        decoder=tf.Variable([2.0])).write(
        str(save_dir / "model.ckpt-1"))
    shutil.copy(RUN / "save_dir" / "options.json", save_dir)
    out = tmp_path / "out"
    _fails(_commands(save_dir, out)[command], tmp_path)
    line = _one_line(capsys, command)
    assert ("model.ckpt-1: neither a bilm_keras nor a bilm-tf checkpoint "
            "(expected 'weights/...' or bilm-tf's 'lm/...' LSTM variables; "
            "found 3 variable(s): decoder/.ATTRIBUTES/VARIABLE_VALUE, "
            "encoder/.ATTRIBUTES/VARIABLE_VALUE, ...)") in line, line


@pytest.mark.parametrize("command", ["test", "dump-weights", "export-hub",
                                     "restart"])
def test_shapes_that_do_not_fit_the_options(command, tmp_path, capsys):
    save_dir = _copy(tmp_path)
    options = json.loads((save_dir / "options.json").read_text())
    options["lstm"]["projection_dim"] = 8
    (save_dir / "options.json").write_text(json.dumps(options))
    _fails(_commands(save_dir, tmp_path / "out")[command], tmp_path)
    line = _one_line(capsys, command)
    assert (f"{save_dir / 'options.json'} does not fit bilm-tf checkpoint "
            f"{save_dir / 'model.ckpt-40'}: ") in line, line
    assert "options give shape (48, 8), checkpoint has (48, 16)" in line


@pytest.mark.parametrize("command", ["test", "dump-weights", "export-hub",
                                     "restart"])
def test_a_missing_data_file(command, tmp_path, capsys):
    save_dir = _copy(tmp_path, "save_dir_tf12")
    (save_dir / "model.ckpt-40.data-00000-of-00001").unlink()
    _fails(_commands(save_dir, tmp_path / "out")[command], tmp_path)
    line = _one_line(capsys, command)
    assert line.endswith(
        f"{save_dir}: no checkpoint reads whole (model.ckpt-40.data-00000-"
        "of-00001: missing (the checkpoint's values; model.ckpt-40.index is "
        "there without them))"), line


def _without_softmax(tmp_path):
    save_dir = tmp_path / "pruned"
    save_dir.mkdir()
    shutil.copy(RUN / "save_dir" / "options.json", save_dir)
    reader = tf.train.load_checkpoint(str(RUN / "save_dir" / "model.ckpt-40"))
    raw = {n: reader.get_tensor(n)
           for n in reader.get_variable_to_shape_map()
           if not n.startswith("lm/softmax/")}
    tf.raw_ops.SaveV2(prefix=str(save_dir / "model.ckpt-40"),
                      tensor_names=list(raw),
                      shape_and_slices=[""] * len(raw),
                      tensors=list(raw.values()))
    return save_dir


@pytest.mark.parametrize("stateful", [True, False])
def test_stateful_without_a_softmax(stateful, tmp_path, capsys):
    save_dir = _without_softmax(tmp_path)
    argv = _commands(save_dir, tmp_path / "out")["test"]
    _fails(argv + ["--stateful"] * stateful, tmp_path)
    assert _one_line(capsys, "test").endswith(
        f"{save_dir / 'model.ckpt-40'}: holds no softmax (lm/softmax/W, "
        "lm/softmax/b missing): perplexity needs the softmax (dump-weights "
        "and export-hub read the LM without it)")
    # what needs no softmax reads it
    out = tmp_path / "dump" / "lm_weights.hdf5"
    assert cli.main(["dump-weights", "--save_dir", str(save_dir),
                     "--outfile", str(out)]) == 0
    ours, theirs = hdf5_datasets(out), hdf5_datasets(RUN / "lm_weights.hdf5")
    assert all(np.array_equal(ours[k], v) for k, v in theirs.items())


def _train(save_dir, init_checkpoint, *more):
    return ["train", "--save_dir", str(save_dir), "--init_checkpoint",
            str(init_checkpoint), "--vocab_file", VOCAB, "--train_prefix",
            HELDOUT, "--max_steps", "1", *more]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_train_from_a_checkpoint_bad_input(short_char_run, tmp_path,
                                           capsys):
    save_dir = tmp_path / "adapted"
    # a vocabulary that is not the checkpoint's
    wrong = tmp_path / "wrong_vocab.txt"
    wrong.write_text("<S>\n</S>\n<UNK>\nthe\n")
    _fails(_train(save_dir, RUN / "save_dir", "--init_vocab_file",
                  str(wrong)), tmp_path)
    assert _one_line(capsys, "train").endswith(
        f"{wrong}: 4 words, but the softmax of "
        f"{RUN / 'save_dir' / 'model.ckpt-40'} has 32 rows (lm/softmax/b): "
        "not the vocabulary it was trained with")
    # options that describe another model
    options = json.loads((RUN / "save_dir" / "options.json").read_text())
    options["lstm"]["dim"] = 64
    other = tmp_path / "options.json"
    other.write_text(json.dumps(options))
    _fails(_train(save_dir, RUN / "save_dir", "--options", str(other)),
           tmp_path)
    line = _one_line(capsys, "train")
    assert ("the options (--options) does not fit bilm-tf checkpoint "
            f"{RUN / 'save_dir' / 'model.ckpt-40'}: lm/RNN_0/rnn/"
            "multi_rnn_cell/cell_0/lstm_cell/kernel: options give shape "
            "(32, 256), checkpoint has (32, 128)") in line, line
    # our own save_dir: restart continues it
    _fails(_train(save_dir, short_char_run[0]), tmp_path)
    assert "is a bilm_keras checkpoint (continue its run with restart " in (
        _one_line(capsys, "train"))
    assert not save_dir.exists()
