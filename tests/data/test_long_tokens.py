"""Tests for bilm_keras/data/long_tokens.py: the warning for a token far
longer than a word (unsegmented text), in the module, the facade and
``bilm-keras embed``."""

import logging

import pytest

from bilm_keras.data.batcher import Batcher, TokenBatcher
from bilm_keras.data.long_tokens import (
    LongToken,
    first_long_token,
    limit_for_batcher,
    long_token_limit,
    long_token_message,
    long_token_warning_for_file,
    warn_of_long_tokens,
)
from bilm_keras.data.manylangs_batcher import ManyLangsBatcher

#: 19 characters, 57 bytes: a line without spaces
UNSEGMENTED = "今天天氣真好阿潮水退了就知道誰沒穿褲子"


def test_limit_without_a_vocabulary_is_what_the_model_reads():
    limit = long_token_limit(50, unit="bytes")
    assert (limit.length, limit.read) == (48, 48)
    assert limit.length_of("今天") == 6  # UTF-8 bytes, as bilm-tf's ids
    assert first_long_token([["x" * 48]], limit) is None
    assert first_long_token([["ok"], ["a", "x" * 49]], limit) == LongToken(
        1, "x" * 49, 49)


def test_limit_from_a_vocabulary_is_twice_its_long_words():
    # 1,000 words: 999 of at most 3 characters, one of 30
    words = ["字" * (1 + k % 3) for k in range(999)] + ["長" * 30]
    limit = long_token_limit(50, unit="characters", words=words)
    assert (limit.length, limit.read) == (6, 48)
    assert "1,000 words (3 characters)" in limit.basis
    assert first_long_token([["今天", "天氣"]], limit) is None
    assert first_long_token([["今天", UNSEGMENTED]], limit).length == 19
    # a vocabulary of long words: what the model reads is the limit
    assert long_token_limit(20, unit="characters",
                            words=["x" * 15]).length == 18


def test_limits_of_the_batchers(manylangs_fixtures):
    assert limit_for_batcher(Batcher(None, 50)).length == 48
    tiny = manylangs_fixtures / "tiny.model"
    batcher = ManyLangsBatcher.from_files(
        tiny / "char.dic", tiny / "word.dic", 20)
    limit = limit_for_batcher(batcher)
    # twice the length of the fixture's 999th word in 1,000 by length
    lengths = sorted(len(w) for w in batcher.word_dic)
    typical = lengths[(len(lengths) - 1) * 999 // 1000]
    assert limit.unit == "characters" and limit.read == 18
    assert limit.length == min(18, 2 * typical)
    assert first_long_token([UNSEGMENTED.split()], limit) is not None


def test_a_word_input_model_is_warned_of_unknown_long_tokens(
        paddle_baike_fixtures):
    vocab = paddle_baike_fixtures / "vocab.txt"
    words = vocab.read_text(encoding="utf-8").split()
    limit = limit_for_batcher(TokenBatcher(str(vocab)))
    # nothing is cut: the limit is the vocabulary's own, in characters
    lengths = sorted(len(w) for w in words)
    assert limit.read is None and limit.unit == "characters"
    assert limit.length == 2 * lengths[(len(lengths) - 1) * 999 // 1000]
    found = first_long_token([["今天", "天气"], ["今天天气很好我们去公园"]],
                             limit)
    assert found.sentence == 1
    message = long_token_message(found, limit, "sentences[1]")
    assert "this one is <UNK>" in message and "cuts" not in message


def test_embed_command_warns_for_a_word_input_model(
        tmp_path, paddle_baike_converted, paddle_baike_fixtures):
    text = tmp_path / "text.txt"
    text.write_text("今天 天气\n今天天气很好我们去公园\n", encoding="utf-8")
    warning = long_token_warning_for_file(
        text, paddle_baike_converted["options_file"],
        paddle_baike_converted["vocab_file"])
    assert warning.startswith(f"{text}, line 2: a token of 11 characters")


def test_warned_once_for_a_list_and_lazily_for_an_iterator():
    limit = long_token_limit(50, unit="bytes")
    sentences = [["ok"], [UNSEGMENTED], ["y" * 60]]
    said = []
    assert warn_of_long_tokens(sentences, limit, said.append) is sentences
    assert len(said) == 1 and said[0].startswith("sentences[1]: a token of "
                                                 "57 bytes")
    assert "'今天 天氣 真好'" in said[0] and "first 48 bytes" in said[0]

    said.clear()
    passed = warn_of_long_tokens(iter(sentences), limit, said.append)
    assert said == []  # nothing read yet
    assert list(passed) == sentences
    assert len(said) == 1 and said[0].startswith("sentences[1]:")
    assert warn_of_long_tokens(sentences, None, said.append) is sentences


def test_message_names_the_place_and_shortens_the_token():
    limit = long_token_limit(50, unit="bytes")
    text = long_token_message(LongToken(4, "z" * 100, 100), limit,
                              "text.txt, line 5")
    assert text.startswith("text.txt, line 5: a token of 100 bytes ('"
                           + "z" * 24 + "...')")


@pytest.mark.slow
def test_facade_warns_once_per_call(fixture_bilm, caplog):
    with caplog.at_level(logging.WARNING,
                         logger="bilm_keras.bidirectional_language_model"):
        vectors = fixture_bilm.embed_sentences(
            [["the", "cat"], [UNSEGMENTED], [UNSEGMENTED + "!"]])
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and warnings[0].startswith("sentences[1]: ")
    assert vectors[1].shape[1] == 1  # embedded as one (cut) token
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        fixture_bilm.embed_sentences([["the", "cat"]])
    assert caplog.records == []


def test_embed_command_warns_naming_the_line(tmp_path, model_dir, capsys):
    from bilm_keras.cli.embed import EmbedJob, _warn_of_long_tokens
    from bilm_keras.embedding.dump_plan import DumpSettings
    from bilm_keras.embedding.outputs import EmbeddingSpec

    text = tmp_path / "text.txt"
    text.write_text("the cat\n今天 天氣\n" + UNSEGMENTED + "\n"
                    + UNSEGMENTED + "\n", encoding="utf-8")
    job = EmbedJob(
        options_file=str(model_dir / "options.json"), weight_file="",
        vocab_file=None, dataset_file=str(text), outfile="",
        spec=EmbeddingSpec(), settings=DumpSettings())
    _warn_of_long_tokens(job)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"WARNING: {text}, line 3: a token of 57 "
                               "bytes")
    text.write_text("the cat\n今天 天氣\n", encoding="utf-8")
    _warn_of_long_tokens(job)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("unit", ["words", ""])
def test_unknown_unit_is_refused(unit):
    with pytest.raises(ValueError, match="unit: expected one of"):
        long_token_limit(50, unit=unit)
