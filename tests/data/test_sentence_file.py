"""check_sentence_file / read_sentence_lines: the input of embed, checked
without TensorFlow."""

import pytest

from bilm_keras.data.sentence_file import (
    SentenceFileError,
    check_sentence_file,
    read_sentence_lines,
)


def test_counts_lines_tokens_and_blank_lines(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("a b c\n\n深度 学习\n  \nlast line without newline",
                    encoding="utf-8")
    stats = check_sentence_file(path)
    assert (stats.n_lines, stats.n_tokens, stats.n_blank_lines) == (5, 9, 2)


def test_byte_order_mark_is_dropped(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffThe cat\n".encode("utf-8"))
    assert list(read_sentence_lines(path)) == ["The cat\n"]


@pytest.mark.parametrize("content,match", [
    (None, r"s.txt: no such file \(expected a text file"),
    (b"", r"s.txt: empty input \(expected one whitespace-tokenized "
          r"sentence per line, found 0 lines\)"),
    (b"\n", r"found 1 line, all blank\)"),
    (b"fine\nfine\ncaf\xe9\n", r"s.txt, line 3: not valid UTF-8 at byte 3 of "
                              r"the line \(invalid continuation byte; near "
                              r"b'caf\\xe9\\n'\); convert the file to UTF-8"),
])
def test_bad_files(tmp_path, content, match):
    path = tmp_path / "s.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SentenceFileError, match=match):
        check_sentence_file(path)


def test_directory(tmp_path):
    with pytest.raises(SentenceFileError, match="is a directory"):
        check_sentence_file(tmp_path)
