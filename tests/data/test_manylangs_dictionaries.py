"""ELMoForManyLangs dictionaries: the fixture's files as upstream reads them,
and every malformed file named by file, line, expected and found."""

import pytest

from bilm_keras.data.manylangs_dictionaries import (
    CHAR_SPECIALS,
    WORD_SPECIALS,
    ManyLangsDictionaryError,
    read_char_dic,
    read_manylangs_dictionary,
    read_word_dic,
)


def test_fixture_char_dic(manylangs_fixtures):
    chars = read_char_dic(manylangs_fixtures / "tiny.model" / "char.dic")
    assert len(chars) == 106
    assert sorted(chars.values()) == list(range(106))
    # line 61 is " \t60": strip() removes the space, upstream reads U+3000
    assert chars["\u3000"] == 60
    assert " " not in chars
    assert all(token in chars for token in CHAR_SPECIALS)
    # the ids the fixture README quotes (char_ids/7 row 0, "New York")
    assert (chars["<eow>"], chars["<bos>"], chars["<bow>"],
            chars["<pad>"], chars["<oov>"]) == (105, 100, 104, 103, 102)
    assert chars["N"] == 59


def test_fixture_word_dic(manylangs_fixtures):
    words = read_word_dic(manylangs_fixtures / "tiny.model" / "word.dic")
    assert len(words) == 78
    assert sorted(words.values()) == list(range(78))
    assert [words[t] for t in ("<oov>", "<bos>", "<eos>", "<pad>")] == [
        0, 1, 2, 3]
    assert "New York" in words
    assert all(token in words for token in WORD_SPECIALS)


def _write(tmp_path, text, name="word.dic"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_later_duplicate_wins(tmp_path):
    path = _write(tmp_path, "a\t5\nb\t1\nc\t2\na\t0\n")
    assert read_manylangs_dictionary(path) == {"a": 0, "b": 1, "c": 2}
    # the later line wins, so a's id 5 is gone and 0..1 is one short
    path = _write(tmp_path, "a\t0\nb\t1\na\t5\n", name="char.dic")
    with pytest.raises(ManyLangsDictionaryError,
                       match=r"char\.dic: line 3: expected ids 0\.\.1 "
                             r"\(2 distinct tokens\), found id 5 for 'a'"):
        read_manylangs_dictionary(path)


@pytest.mark.parametrize("line, shown", [
    ("x\tone", r"'x\\tone\\n'"),              # not an integer id
    ("x\ty\t3", r"'x\\ty\\t3\\n'"),           # three fields
    ("", r"'\\n'"),                           # an empty line
    ("x 3", r"'x 3\\n'"),                     # a space, not a tab
])
def test_line_not_token_tab_id(tmp_path, line, shown):
    path = _write(tmp_path, f"a\t0\n{line}\nb\t1\n")
    with pytest.raises(ManyLangsDictionaryError,
                       match=r"word\.dic: line 2: expected 'token<TAB>id' "
                             r"\(one tab, an integer id\), found " + shown):
        read_manylangs_dictionary(path)


def test_ids_not_contiguous(tmp_path):
    path = _write(tmp_path, "a\t0\nb\t2\n")
    with pytest.raises(ManyLangsDictionaryError,
                       match=r"line 2: expected ids 0\.\.1 \(2 distinct "
                             r"tokens\), found id 2 for 'b'"):
        read_manylangs_dictionary(path)


def test_ids_repeated(tmp_path):
    path = _write(tmp_path, "a\t0\nb\t0\n")
    with pytest.raises(ManyLangsDictionaryError,
                       match=r"line 2: expected distinct ids 0\.\.1, found "
                             r"id 0 for both 'a' \(line 1\) and 'b'"):
        read_manylangs_dictionary(path)


def test_missing_specials(tmp_path):
    path = _write(tmp_path, "<oov>\t0\n<bos>\t1\n<pad>\t2\n")
    with pytest.raises(ManyLangsDictionaryError,
                       match=r"word\.dic: expected the special tokens <oov> "
                             r"<bos> <eos> <pad>; missing: <eos>"):
        read_word_dic(path)


def test_missing_file_and_bad_utf8(tmp_path):
    with pytest.raises(ManyLangsDictionaryError,
                       match=r"char\.dic: dictionary file not found"):
        read_char_dic(tmp_path / "char.dic")
    path = tmp_path / "char.dic"
    path.write_bytes(b"a\t0\n\xff\t1\n")
    with pytest.raises(ManyLangsDictionaryError,
                       match=r"char\.dic: expected UTF-8 text, found byte "
                             r"b'\\xff' at offset 4"):
        read_char_dic(path)
