"""The library logs: a program that trains or embeds through the API sees
the command's lines by default and silences them with ``logging`` alone;
``bilm-keras --quiet`` keeps the warnings only."""

import logging

import pytest
from helpers import fixture_options

from bilm_keras import EmbeddingSpec, cli, dump_bilm_embeddings
from bilm_keras._utils.console_log import (
    CONSOLE_HANDLER,
    LOGGER,
    restore_console_level,
    set_console_level,
)
from bilm_keras.embedding.dump_plan import DumpSettings
from bilm_keras.training import TrainingRun, train


@pytest.fixture
def level():
    """The package logger's level, set back after the test."""
    logger = logging.getLogger(LOGGER)
    before = logger.level
    yield logger
    logger.setLevel(before)
    logging.disable(logging.NOTSET)


def test_lines_go_to_stdout_warnings_and_progress_to_stderr(capsys, level):
    # the quick tier's check of the handler and the commands' levels; the
    # slow tests below drive it through training and embedding
    assert CONSOLE_HANDLER in level.handlers  # installed on import
    logging.getLogger(LOGGER + ".training").info("step 1")
    logging.getLogger(LOGGER + ".embedding").warning("a long token")
    logging.getLogger(LOGGER + ".dump.progress").info("12 of 40")
    logging.getLogger(LOGGER + ".training").debug("not at INFO")
    got = capsys.readouterr()
    assert got.out == "step 1\n"
    assert got.err == "a long token\n12 of 40\n"
    before = set_console_level(quiet=True)
    logging.getLogger(LOGGER + ".training").info("hidden by --quiet")
    logging.getLogger(LOGGER + ".training").warning("kept by --quiet")
    set_console_level(verbose=True)
    logging.getLogger(LOGGER + ".training").debug("shown by --verbose")
    restore_console_level(before)
    assert level.level == before
    got = capsys.readouterr()
    assert (got.out, got.err) == ("shown by --verbose\n",
                                  "kept by --quiet\n")
    # silenced with logging alone
    logging.disable(logging.CRITICAL)
    logging.getLogger(LOGGER + ".embedding").warning("silenced")
    assert capsys.readouterr() == ("", "")


@pytest.mark.nightly  # a user's program end to end in a fresh process
@pytest.mark.slow  # a training run and three dumps
def test_an_api_user_silences_training_and_embedding(train_dir, model_dir,
                                                     tmp_path, capsys,
                                                     level):
    assert CONSOLE_HANDLER in level.handlers  # installed on import
    run = TrainingRun(train_prefix=str(train_dir / "data.txt"),
                      vocab_file=str(train_dir / "vocab.txt"),
                      save_dir=str(tmp_path / "run"), seed=1, log_every=1,
                      max_steps=1)
    # silenced with logging alone: nothing on stdout or stderr (the
    # lines it gives by default: test_quiet_keeps_warnings_only,
    # tests/training/test_train.py)
    logging.disable(logging.CRITICAL)
    train(fixture_options(n_epochs=1), run)
    dataset = tmp_path / "s.txt"
    dataset.write_text("a b\nc\n", encoding="utf-8")
    files = [str(model_dir / "vocab_test.txt"), str(dataset),
             str(model_dir / "options.json"),
             str(model_dir / "lm_weights.hdf5")]
    dump_bilm_embeddings(*files, str(tmp_path / "e.hdf5"), EmbeddingSpec(),
                         DumpSettings(progress=False, resume=True))
    silent = capsys.readouterr()
    assert (silent.out, silent.err) == ("", "")
    # the notice it would have given, on stderr
    logging.disable(logging.NOTSET)
    dump_bilm_embeddings(*files, str(tmp_path / "f.hdf5"), EmbeddingSpec(),
                         DumpSettings(progress=False, resume=True))
    assert "--resume: no interrupted run to continue" in (
        capsys.readouterr().err)
    # a level is enough too
    level.setLevel(logging.ERROR)
    dump_bilm_embeddings(*files, str(tmp_path / "g.hdf5"), EmbeddingSpec(),
                         DumpSettings(progress=False, resume=True))
    assert capsys.readouterr().err == ""


@pytest.mark.slow  # two training runs through the command
def test_quiet_keeps_warnings_only(train_dir, tmp_path, capsys, level):
    options = tmp_path / "options.json"
    fixture_options(n_epochs=1).to_json(options)
    argv = ["train", "--options", str(options), "--train_prefix",
            str(train_dir / "data.txt"), "--vocab_file",
            str(train_dir / "vocab.txt"), "--max_steps", "1",
            "--log_every", "1", "--seed", "1"]
    cli.run(argv + ["--save_dir", str(tmp_path / "shown")])
    assert "step 1/" in capsys.readouterr().out
    cli.run(argv + ["--save_dir", str(tmp_path / "quiet"), "--quiet"])
    assert "step 1/" not in capsys.readouterr().out
    assert level.level == logging.INFO  # as before the command
