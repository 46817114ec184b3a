"""End-to-end training on bilm-tf's train fixture, as bilm-tf's tests."""

import json
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import BidirectionalLanguageModel
from bilm_keras.data.corpus import CorpusError
from bilm_keras.data.tf_dataset import make_tf_dataset
from bilm_keras.data.vocabulary import VocabularyError
from bilm_keras.options import BiLMOptions
from bilm_keras.training import inputs
from bilm_keras.training import TrainingRun, evaluate, restart, train
from bilm_keras.save_dirs import dump_weights
from helpers import fixture_options

# for tests of the loop's bookkeeping (data stream, progress lines), not
# of the model: one LSTM layer traces in two thirds of the CPU time of two
ONE_LAYER = {"dim": 16, "projection_dim": 8, "n_layers": 1}

SENTENCES = [["the", "language", "models", "are", "neural", "."],
             ["words", "of", "the", "vocabulary"]]


def _train(train_dir, save_dir, options, **kwargs):
    return train(options, TrainingRun(
        train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), save_dir=str(save_dir),
        seed=kwargs.pop("seed", 1), log_every=1000, **kwargs))


@pytest.fixture(scope="module")
def killed_at_step_2(train_dir, tmp_path_factory):
    """``(save_dir, result, made)``: a fresh one-layer run of one epoch (6
    steps of 2 x 10 tokens, no seed given) that stops after step 2
    (``max_steps``), as if killed there; ``made`` holds the ``(seed,
    skip_batches)`` of every training dataset it made. The two restart
    tests each continue a copy (a fresh run is mostly tracing its step,
    ~3 CPU s); the copy stands alone (the checkpoint state file names its
    checkpoints relative to the save_dir)."""
    made = []
    options = fixture_options(n_epochs=1, lstm=ONE_LAYER)
    save_dir = tmp_path_factory.mktemp("killed_at_step_2") / "ckpt"
    with pytest.MonkeyPatch.context() as patch:
        _record_datasets(patch, made)
        result = train(options, TrainingRun(
            train_prefix=str(train_dir / "data.txt"),
            vocab_file=str(train_dir / "vocab.txt"), save_dir=str(save_dir),
            log_every=1000, max_steps=2))
    return save_dir, result, made


def _record_datasets(monkeypatch, made):
    """Appends ``(seed, skip_batches)`` of every training dataset made to
    ``made``."""

    def recording_make_tf_dataset(data, batch_size, num_steps,
                                  skip_batches=0):
        made.append((data.forward.seed, skip_batches))
        return make_tf_dataset(data, batch_size, num_steps, skip_batches)

    monkeypatch.setattr(inputs, "make_tf_dataset", recording_make_tf_dataset)


def _continue_a_copy(killed, tmp_path):
    """A copy of the killed run's save_dir, to restart in; the
    checkpoint it stopped with, as read from the copy."""
    save_dir = tmp_path / "ckpt"
    shutil.copytree(killed[0], save_dir)
    return save_dir, save_dir / pathlib.Path(killed[1]["checkpoint"]).name


def _heldout(train_dir, save_dir):
    return evaluate(save_dir=str(save_dir),
                    vocab_file=str(train_dir / "vocab.txt"),
                    test_prefix=str(train_dir / "data.txt"), batch_size=1)


@pytest.fixture(scope="module")
def char_model(train_dir, tmp_path_factory):
    """A bidirectional char-CNN model trained as bilm-tf's test does."""
    save_dir = tmp_path_factory.mktemp("bilm_chars")
    result = _train(train_dir, save_dir, fixture_options(use_chars=True))
    return save_dir, result


@pytest.mark.slow
# skip connections train in tests/training/test_training_grid.py's default
# cases: token_skip is nightly
@pytest.mark.parametrize("kind", [
    "token_forward", pytest.param("token_skip", marks=pytest.mark.nightly),
    "token_shared"])
def test_token_models_reach_heldout_perplexity(train_dir, tmp_path, kind):
    options = {
        "token_forward": fixture_options(bidirectional=False),
        "token_skip": fixture_options(skip=True),
        "token_shared": fixture_options(share=True),
    }[kind]
    result = _train(train_dir, tmp_path, options)
    assert result["step"] == 50 * (134 // 20)
    heldout = _heldout(train_dir, tmp_path)
    assert heldout["perplexity"] < 20.0, heldout
    if options.bidirectional:
        assert set(heldout) >= {"forward_perplexity", "backward_perplexity"}


@pytest.mark.slow
def test_char_model_reaches_heldout_perplexity(train_dir, char_model):
    save_dir, _ = char_model
    heldout = _heldout(train_dir, save_dir)
    assert heldout["perplexity"] < 20.0, heldout
    assert heldout["files"] == [str(train_dir / "data.txt")]
    # every target once: 134 words + one </S> per sentence
    n_sentences = sum(1 for line in open(train_dir / "data.txt")
                      if line.strip())
    assert heldout["n_tokens"] == 134 + n_sentences
    saved = json.load(open(save_dir / "options.json"))
    assert saved["n_tokens_vocab"] == 32
    assert saved["n_train_tokens"] == 134


@pytest.mark.slow
def test_chinese_corpus_trains_and_dumps(tmp_path):
    corpus = tmp_path / "zh.txt"
    lines = ["我 爱 北京 天安门 。", "   ", "天安门 上 太阳 升 。",
             "北京 是 中国 的 首都 。", ""] * 4
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    vocab = tmp_path / "vocab.txt"
    words = sorted({w for line in lines for w in line.split()})
    vocab.write_text("\n".join(["<S>", "</S>", "<UNK>"] + words) + "\n",
                     encoding="utf-8")
    options = fixture_options(use_chars=True, n_epochs=2, n_train_tokens=None)
    options = options.replace(char_cnn=options.char_cnn.__class__(
        **{**options.char_cnn.__dict__, "max_characters_per_token": 12}))
    save_dir = tmp_path / "ckpt"
    result = train(options, TrainingRun(
        train_prefix=str(corpus), vocab_file=str(vocab),
        save_dir=str(save_dir), seed=0, log_every=1000))
    saved = BiLMOptions.from_json(save_dir / "options.json")
    # blank lines are skipped, not counted as tokens
    assert saved.n_train_tokens == 4 * (5 + 5 + 6)
    assert result["step"] == 2 * (saved.n_train_tokens // 20)
    out = dump_weights(str(save_dir), str(tmp_path / "zh.hdf5"))
    bilm = BidirectionalLanguageModel(out["options_file"], out["weight_file"])
    emb = bilm.embed_sentences([["北京", "是", "首都"]])[0]
    assert emb.shape == (3, 3, 16)
    assert np.isfinite(emb).all()


# ---------------------------------------------------------------- bad input
def test_missing_training_glob(train_dir, tmp_path):
    with pytest.raises(CorpusError, match="nothing_here"):
        train(fixture_options(), TrainingRun(
            save_dir=str(tmp_path),
            train_prefix=str(tmp_path / "nothing_here*"),
            vocab_file=str(train_dir / "vocab.txt")))


def test_empty_training_file(train_dir, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(CorpusError,
                       match=r"empty.txt: no tokens .*2 empty or whitespace"):
        train(fixture_options(n_train_tokens=None), TrainingRun(
            save_dir=str(tmp_path / "ckpt"), train_prefix=str(empty),
            vocab_file=str(train_dir / "vocab.txt"), log_every=1))


def test_vocab_without_special_tokens(train_dir, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("the\nof\n<UNK>\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match=r"vocab.txt.*<S>, </S>"):
        train(fixture_options(), TrainingRun(
            save_dir=str(tmp_path / "c"),
            train_prefix=str(train_dir / "data.txt"), vocab_file=str(vocab)))


def _stream(path):
    """The data stream a checkpoint records: seed, start step, batch."""
    return [int(tf.train.load_variable(
        path, f"data_stream/{name}/.ATTRIBUTES/VARIABLE_VALUE"))
        for name in ("seed", "start_step", "batch_size")]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_restart_continues_the_data_stream(train_dir, tmp_path, capsys,
                                          monkeypatch, killed_at_step_2):
    # 6 steps of 2 x 10 tokens, killed after step 2
    save_dir, first_checkpoint = _continue_a_copy(killed_at_step_2, tmp_path)
    made = list(killed_at_step_2[2])  # (seed, skip_batches), in order
    _record_datasets(monkeypatch, made)
    seed, start, batch = _stream(first_checkpoint)
    assert (start, batch) == (0, killed_at_step_2[1]["options"].batch_size)
    # after a crash: the same stream, its first 2 batches passed over
    after_crash = restart(TrainingRun(
        save_dir=str(save_dir), train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), log_every=1000))
    assert after_crash["step"] == 6
    assert "after its first 2 batches" in capsys.readouterr().out
    assert _stream(after_crash["checkpoint"]) == [seed, 0, batch]
    assert made == [(seed, 0), (seed, 2)]
    # new epochs (fine-tuning): a new stream from the current step
    more = restart(TrainingRun(
        save_dir=str(save_dir), train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), n_epochs=1, log_every=1000))
    assert "after its first" not in capsys.readouterr().out
    assert _stream(more["checkpoint"])[1:] == [6, batch]
    assert made[-1] == (_stream(more["checkpoint"])[0], 0)


@pytest.mark.slow
def test_restart_with_another_batch_size_starts_a_new_stream(
        train_dir, tmp_path, capsys, killed_at_step_2):
    # an epoch is 6 steps of 2 x 10 tokens, 3 of 4 x 10: after the crash at
    # step 2, batch 4 trains step 3 (the stream's bookkeeping: one layer)
    save_dir, first_checkpoint = _continue_a_copy(killed_at_step_2, tmp_path)
    seed = _stream(first_checkpoint)[0]
    resumed = restart(TrainingRun(
        save_dir=str(save_dir), train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), batch_size=4, log_every=1000))
    assert resumed["step"] == 3
    assert "after its first" not in capsys.readouterr().out
    new_seed, start, batch = _stream(resumed["checkpoint"])
    assert (start, batch) == (2, 4)
    assert new_seed != seed


@pytest.mark.slow
def test_progress_and_tensorboard_show_each_direction(train_dir, tmp_path,
                                                      capsys):
    options = fixture_options(n_epochs=1, lstm=ONE_LAYER)  # 6 steps
    trained = train(options, TrainingRun(
        train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), save_dir=str(tmp_path),
        seed=1, log_every=3))
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("step ")]
    assert len(lines) == 2
    for line in lines:
        assert "  forward " in line and "  backward " in line
    per_direction = trained["direction_perplexity"]
    assert set(per_direction) == {"forward", "backward"}
    # the mean line is exp of the mean of the directions' mean losses
    mean_loss = np.mean([np.log(p) for p in per_direction.values()])
    assert trained["perplexity"] == pytest.approx(np.exp(mean_loss),
                                                  rel=1e-5)
    tags = set()
    for event_file in (tmp_path / "logs").iterdir():
        for record in tf.compat.v1.train.summary_iterator(str(event_file)):
            tags.update(v.tag for v in record.summary.value)
    assert {"train_perplexity", "train_perplexity/forward",
            "train_perplexity/backward"} <= tags


def test_training_run_is_one_checked_value(train_dir, tmp_path):
    from bilm_keras._utils.settings import SettingError

    run = TrainingRun(train_prefix=str(train_dir / "data.txt"),
                      vocab_file=train_dir / "vocab.txt",
                      save_dir=tmp_path, devices=["CPU:0"], max_steps=3)
    assert run.vocab_file == str(train_dir / "vocab.txt")  # a str path
    assert run.devices == ("CPU:0",) and run.save_every == 1250
    with pytest.raises(AttributeError):
        run.seed = 1
    for changes, field, reason in [
        (dict(save_every=0), "save_every", "expected an integer >= 1, "
                                           "found 0"),
        (dict(max_steps=-1), "max_steps", "expected an integer >= 1 or "
                                          "None, found -1"),
        (dict(seed=2**32), "seed", "expected an integer in 0..4294967295 "
                                   "or None, found 4294967296"),
        (dict(n_gpus=True), "n_gpus", "expected an integer >= 0 or None, "
                                      "found True"),
        (dict(softmax_bias="uniform"), "softmax_bias",
         "expected 'unigram' or 'zeros', found 'uniform'"),
        (dict(save_dir=None), "save_dir", "expected a path, found None"),
    ]:
        with pytest.raises(SettingError) as error:
            run.replace(**changes)
        assert (error.value.field, error.value.reason) == (field, reason)
    # train() takes the settings as one value, checked when built
    with pytest.raises(TypeError, match=r"^run: expected a TrainingRun, "
                                        r"found dict$"):
        train(fixture_options(), dict(train_prefix=run.train_prefix,
                                      vocab_file=run.vocab_file,
                                      save_dir=run.save_dir))
    assert not any(tmp_path.iterdir())


def test_a_runs_conflicting_settings_name_each_other(tmp_path):
    import pickle

    from bilm_keras.training.training_run import SettingConflict

    run = TrainingRun(train_prefix="a", vocab_file="v", save_dir=tmp_path)
    for changes, field, other, role in [
        (dict(init_weights="w.hdf5", init_checkpoint="ckpt"),
         "init_checkpoint", "init_weights", None),
        (dict(init_vocab_file="old.txt"), "init_vocab_file",
         "init_checkpoint", "the vocabulary"),
    ]:
        with pytest.raises(SettingConflict) as error:
            run.replace(**changes)
        assert (error.value.field, error.value.other,
                error.value.role) == (field, other, role)
        copy = pickle.loads(pickle.dumps(error.value))  # to a Beam worker
        assert (type(copy), str(copy), copy.other, copy.role) == (
            SettingConflict, str(error.value), other, role)


def test_every_integer_setting_has_its_range():
    import dataclasses

    from bilm_keras.training.training_run import INT_RANGES

    integers = {f.name for f in dataclasses.fields(TrainingRun)
                if f.type in ("int", "Optional[int]")}
    assert integers == set(INT_RANGES)


# a whole run; tests/layers/test_precision.py checks its steps
@pytest.mark.nightly
@pytest.mark.slow
def test_mixed_bfloat16_run_follows_float32(train_dir, tmp_path):
    """``bilm-keras train --precision mixed_bfloat16`` against the same
    run in float32 (library), 30 steps each from the same seed: heldout
    perplexities within 2 % (bench/RESULTS.md has the figures)."""
    from bilm_keras import cli

    options = fixture_options(dropout=0.0)
    (tmp_path / "options.json").write_text(json.dumps(options.to_dict()))
    assert cli.main([
        "train", "--options", str(tmp_path / "options.json"),
        "--train_prefix", str(train_dir / "data.txt"),
        "--vocab_file", str(train_dir / "vocab.txt"),
        "--save_dir", str(tmp_path / "bf16"), "--seed", "1",
        "--log_every", "1000", "--max_steps", "30",
        "--precision", "mixed_bfloat16"]) == 0
    _train(train_dir, tmp_path / "f32", options, max_steps=30)
    perplexity = {name: _heldout(train_dir, tmp_path / name)["perplexity"]
                  for name in ("bf16", "f32")}
    assert perplexity["bf16"] != perplexity["f32"]
    assert abs(perplexity["bf16"] / perplexity["f32"] - 1) < 0.02, perplexity
