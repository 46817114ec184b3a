"""bilm-tf's run continued (``restart --save_dir``) and a new run started
from its checkpoint (``train --init_checkpoint``), on the checkpoint
bilm-tf's own ``train()`` wrote (``tests/fixtures/bilm_tf_run``).

That a run continues from the checkpoint is checked two ways: right after
loading, every weight, accumulator and the step equal the checkpoint's
tensors exactly; and after one step, Adagrad's own update ties the
checkpoint to the next one: ``accumulator += g * g`` and ``w -= lr * g /
sqrt(accumulator)``, so ``(w0 - w1)**2 * a1 / lr**2 == a1 - a0`` for
every element, with ``a0`` and ``w0`` bilm-tf's (a run that started its
accumulators at 1.0, or from other weights, breaks it).
"""

import json
import pathlib
import shutil

import numpy as np
import pytest

from helpers import bilm_tf_state, counted_calls

from bilm_keras import cli
from bilm_keras.training import loop
from bilm_keras.weights import model_detection
from bilm_keras.data.vocabulary import Vocabulary
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.options import BiLMOptions
from bilm_keras.training.adaptation import shared_words
from bilm_keras.training.bilm_tf_restart import (
    BILM_TF_STATE_FILE,
    bilm_tf_run_options,
    restore_bilm_tf_run,
)
from bilm_keras.training.run_checkpoint import RunCheckpoint
from bilm_keras.save_dirs.our_run import model_checkpoint
from bilm_keras.weights.model_detection import locate_checkpoint
from bilm_keras.data.vocab_for_options import load_vocab
from bilm_keras.training.model_setup import build_model
from bilm_keras.weights.bilm_tf_checkpoint import read_bilm_tf_checkpoint

RUN = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "bilm_tf_run"
GENERATIONS = ["save_dir", pytest.param("save_dir_tf12",
                                        marks=pytest.mark.slow)]
LEARNING_RATE = 0.2  # bilm-tf's; its options.json does not say


def _copy(tmp_path, sub="save_dir"):
    save_dir = tmp_path / sub
    shutil.copytree(RUN / sub, save_dir)
    return save_dir


def _bilm_tf_state(save_dir, options):
    """``({variable path: (weight, accumulator)}, step)`` of bilm-tf's
    checkpoint, read in our layout."""
    with placeholder_weights():
        lm, _ = build_model(options)
    checkpoint = read_bilm_tf_checkpoint(
        locate_checkpoint(save_dir), lm.backbone, softmax=lm.softmax,
        options_file=save_dir / "options.json")
    weights, accumulators = bilm_tf_state(checkpoint)
    return ({p: (weights[p], accumulators[p]) for p in weights},
            checkpoint.global_step)


def _our_state(save_dir, name):
    """The same of our checkpoint ``name`` in ``save_dir``."""
    options = BiLMOptions.from_json(save_dir / "options.json")
    with placeholder_weights():
        lm, optimizer = build_model(options)
    model_checkpoint(lm, optimizer=optimizer).restore(
        str(save_dir / name)).expect_partial()
    return ({v.path: (v.numpy(), optimizer.accumulator(v).numpy())
             for v in lm.trainable_variables},
            int(optimizer.iterations.numpy()))


def _check_one_adagrad_step(before, after):
    """``after`` is one Adagrad step from ``before`` (see the module's
    docstring); returns the fraction of elements the step moved."""
    moved = total = 0
    for path, (w0, a0) in before.items():
        w1, a1 = (x.astype(np.float64) for x in after[path])
        w0, a0 = w0.astype(np.float64), a0.astype(np.float64)
        g2 = a1 - a0
        # accumulators only grow, from the checkpoint's values
        assert (g2 >= -1e-6 * a1).all(), path
        # where the step is well above float32's resolution of w and of
        # the accumulator (a g * g below 1e-7 of it does not change it)
        resolved = ((np.abs(w0 - w1) > 1e-3 * np.abs(w0) + 1e-6)
                    & (g2 > 1e-4 * a1))
        expected = (w0 - w1) ** 2 * a1 / LEARNING_RATE ** 2
        np.testing.assert_allclose(expected[resolved], g2[resolved],
                                   rtol=2e-2, err_msg=path)
        moved += int(resolved.sum())
        total += w0.size
    return moved / total


@pytest.mark.parametrize("sub", GENERATIONS)
def test_the_state_right_after_loading_is_the_checkpoints(sub, tmp_path):
    save_dir = _copy(tmp_path, sub)
    options = bilm_tf_run_options(save_dir)
    expected, step = _bilm_tf_state(save_dir, options)
    with placeholder_weights():
        lm, optimizer = build_model(options)
    found = locate_checkpoint(save_dir)
    saved = RunCheckpoint(lm, optimizer, batch_size=options.batch_size)
    assert restore_bilm_tf_run(found, saved, save_dir=save_dir) == step == 40
    assert int(optimizer.iterations.numpy()) == 40
    assert sorted(expected) == sorted(v.path for v in lm.trainable_variables)
    for variable in lm.trainable_variables:
        weight, accumulator = expected[variable.path]
        assert np.array_equal(variable.numpy(), weight), variable.path
        assert np.array_equal(optimizer.accumulator(variable).numpy(),
                              accumulator), variable.path
    # the accumulators are bilm-tf's sums, not Adagrad's initial 1.0
    _, softmax_accumulator = expected["language_model/softmax/W"]
    assert (softmax_accumulator > 1.001).mean() > 0.5


def test_options_of_a_continued_run(tmp_path):
    save_dir = _copy(tmp_path)
    options = bilm_tf_run_options(save_dir)
    # bilm-tf carried the states across sentences: so does its run here
    assert options.reset_states_at_sentence_start is False
    assert options.n_train_tokens == 1600
    # unless its options say otherwise
    d = json.loads((save_dir / "options.json").read_text())
    d["reset_states_at_sentence_start"] = True
    (save_dir / "options.json").write_text(json.dumps(d))
    assert bilm_tf_run_options(save_dir).reset_states_at_sentence_start


def _restart(save_dir, capsys, *more):
    cli.run(["restart", "--save_dir", str(save_dir),
             "--vocab_file", str(RUN / "vocab.txt"),
             "--train_prefix", str(RUN / "heldout.txt"),
             "--n_epochs", "1", "--max_steps", "1", "--seed", "0",
             "--log_every", "1", *more])
    return capsys.readouterr().out


@pytest.mark.slow  # two restarts (~13 s); the quick tier checks the state
# the older names are read by this module's GENERATIONS tests and by
# tests/cli/test_bilm_tf_save_dirs.py; their restart is nightly
@pytest.mark.parametrize("sub", [
    "save_dir", pytest.param("save_dir_tf12", marks=pytest.mark.nightly)])
def test_restart_continues_bilm_tfs_run(sub, tmp_path, capsys):
    save_dir = _copy(tmp_path, sub)
    before, _ = _bilm_tf_state(save_dir, bilm_tf_run_options(save_dir))
    original = {p.name: p.read_bytes() for p in (RUN / sub).iterdir()}

    out = _restart(save_dir, capsys)
    assert (f"restored bilm-tf's checkpoint {save_dir / 'model.ckpt-40'} "
            in out), out
    assert ("at step 40; bilm-tf saved no data position: a new data "
            "stream starts") in out
    after, step = _our_state(save_dir, "model-41")
    assert step == 41
    assert _check_one_adagrad_step(before, after) > 0.02

    # bilm-tf's files untouched, its state file set aside; ours wins
    for name, data in original.items():
        kept = BILM_TF_STATE_FILE if name == "checkpoint" else name
        if name != "options.json":
            assert (save_dir / kept).read_bytes() == data, name
    assert 'model_checkpoint_path: "model-41"' in (
        save_dir / "checkpoint").read_text()
    # its options as it wrote them, with the states' handling said
    written = json.loads((save_dir / "options.json").read_text())
    for key, value in json.loads(original["options.json"]).items():
        if isinstance(value, dict):
            for k, v in value.items():
                assert written[key][k] == v, (key, k)
        else:
            assert written[key] == value, key
    assert written["reset_states_at_sentence_start"] is False

    # a second restart continues from our checkpoint
    out = _restart(save_dir, capsys)
    assert f"restored {save_dir / 'model-41'} at step 41" in out, out
    again, step = _our_state(save_dir, "model-42")
    assert step == 42
    assert _check_one_adagrad_step(after, again) > 0.02
    assert locate_checkpoint(save_dir).path == str(save_dir / "model-42")


# ------------------------------------------ train --init_checkpoint
def _other_vocab(tmp_path):
    """The fixture's words reordered, three dropped, two new."""
    words = (RUN / "vocab.txt").read_text().split()
    kept = words[:3] + words[3:][::-1][:-3]
    path = tmp_path / "other_vocab.txt"
    path.write_text("\n".join(kept + ["wombat", "Zürich"]) + "\n",
                    encoding="utf-8")
    return path, words


def test_softmax_rows_kept_by_word(tmp_path, capsys):
    from bilm_keras.training.adaptation import init_softmax_from_checkpoint

    vocab_path, old_words = _other_vocab(tmp_path)
    options = BiLMOptions.from_json(RUN / "save_dir" / "options.json")
    new_vocab = load_vocab(str(vocab_path), options)
    options = options.replace(n_tokens_vocab=new_vocab.size)
    found = locate_checkpoint(RUN / "save_dir")
    lm, _ = build_model(options, init_checkpoint=found)
    drawn = lm.softmax.W.numpy()
    kept = init_softmax_from_checkpoint(
        lm, found, init_vocab_file=str(RUN / "vocab.txt"),
        vocab=new_vocab, vocab_file=str(vocab_path))
    assert capsys.readouterr().out.splitlines() == [
        f"softmax: 29 of the 31 words of {vocab_path} keep their rows from "
        f"{RUN / 'save_dir' / 'model.ckpt-40'} (the words "
        f"{RUN / 'vocab.txt'} has too); 2 get new rows"]
    assert kept == 29
    raw = read_bilm_tf_checkpoint(found, lm.backbone,
                                  options_file="the options")
    W = raw.read_tensor("lm/softmax/W")
    b = raw.read_tensor("lm/softmax/b")
    index = {w: i for i, w in enumerate(old_words)}
    for i, word in enumerate(vocab_path.read_text("utf-8").split()):
        if word in index:
            assert np.array_equal(lm.softmax.W.numpy()[i], W[index[word]])
            assert lm.softmax.b.numpy()[i] == b[index[word]]
        else:  # a new row, as drawn
            assert np.array_equal(lm.softmax.W.numpy()[i], drawn[i])
    # the backbone is the checkpoint's
    for entry, value in raw.iter_weights():
        assert np.array_equal(entry.variable.numpy(), value)


def test_shared_words():
    old = Vocabulary(RUN / "vocab.txt")
    new_rows, old_rows = shared_words(old, old)
    assert np.array_equal(new_rows, np.arange(old.size))
    assert np.array_equal(old_rows, np.arange(old.size))


def _train_from_checkpoint(save_dir, *more):
    return cli.run(["train", "--save_dir", str(save_dir),
                    "--init_checkpoint", str(RUN / "save_dir"),
                    "--vocab_file", str(RUN / "vocab.txt"),
                    "--train_prefix", str(RUN / "heldout.txt"),
                    "--max_steps", "1", "--seed", "0", "--log_every", "1",
                    *more])


@pytest.mark.slow  # a restart and a new run, one step each (~10 s)
def test_a_run_locates_its_checkpoint_once(tmp_path, capsys, monkeypatch):
    # the family and the writer, from the files and the checkpoint's
    # names: each asked once, however many steps of the run need them
    detected = counted_calls(monkeypatch, model_detection, "detect_model")
    located = counted_calls(monkeypatch, model_detection,
                            "locate_checkpoint")
    resumed = counted_calls(monkeypatch, loop, "locate_checkpoint")
    save_dir = _copy(tmp_path)
    _restart(save_dir, capsys)
    assert (detected, located, resumed) == ([], [], [str(save_dir)])
    _train_from_checkpoint(tmp_path / "adapted", "--init_vocab_file",
                           str(RUN / "vocab.txt"))
    assert detected == [str(RUN / "save_dir")]
    assert located == [str(RUN / "save_dir")]


@pytest.mark.slow
def test_train_from_a_checkpoint_with_its_vocabulary(tmp_path, capsys):
    # the same vocabulary: the whole softmax kept; a new Adagrad (1.0) and
    # step count; the epoch of the new corpus
    save_dir = tmp_path / "adapted"
    result = _train_from_checkpoint(save_dir, "--init_vocab_file",
                                    str(RUN / "vocab.txt"))
    out = capsys.readouterr().out
    assert "softmax: kept whole from" in out, out
    assert result["step"] == 1
    # the epoch is the new corpus's, not the checkpoint's 1600 tokens
    assert result["options"].n_train_tokens == sum(
        len(line.split()) for line in
        (RUN / "heldout.txt").read_text("utf-8").splitlines())
    options = bilm_tf_run_options(RUN / "save_dir")
    before, _ = _bilm_tf_state(RUN / "save_dir", options)
    fresh = {p: (w, np.ones_like(a)) for p, (w, a) in before.items()}
    after, step = _our_state(save_dir, "model-1")
    assert step == 1
    assert _check_one_adagrad_step(fresh, after) > 0.02


def test_the_same_vocabulary_keeps_the_whole_softmax(capsys):
    from bilm_keras.training.adaptation import init_softmax_from_checkpoint

    options = BiLMOptions.from_json(RUN / "save_dir" / "options.json")
    vocab = load_vocab(str(RUN / "vocab.txt"), options)
    found = locate_checkpoint(RUN / "save_dir")
    lm, _ = build_model(options, init_checkpoint=found)
    assert init_softmax_from_checkpoint(
        lm, found, init_vocab_file=str(RUN / "vocab.txt"),
        vocab=vocab, vocab_file=str(RUN / "vocab.txt")) == vocab.size
    assert capsys.readouterr().out == (
        f"softmax: kept whole from {RUN / 'save_dir' / 'model.ckpt-40'} "
        "(the same vocabulary)\n")
    raw = read_bilm_tf_checkpoint(found, lm.backbone,
                                  options_file="the options")
    assert np.array_equal(lm.softmax.W.numpy(), raw.read_tensor("lm/softmax/W"))
    assert np.array_equal(lm.softmax.b.numpy(), raw.read_tensor("lm/softmax/b"))
