"""read_utf8_lines: the one line reader of the corpus, the vocabulary
builder and the sentences to embed; each caller's error type and hint."""

import pytest

from bilm_keras.data.corpus import CorpusError, read_lines
from bilm_keras.data.sentence_file import (
    SentenceFileError,
    read_sentence_lines,
)
from bilm_keras.data.utf8_lines import read_utf8_lines


def test_lines_numbered_bom_dropped(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"\xef\xbb\xbfcaf\xc3\xa9 au lait\n\nfin")
    assert list(read_utf8_lines(path)) == [
        (1, "café au lait\n"), (2, "\n"), (3, "fin")]
    # the corpus reader and the sentence reader read the same lines
    assert list(read_lines(str(path))) == list(read_utf8_lines(path))
    assert list(read_sentence_lines(path)) == [
        line for _, line in read_utf8_lines(path)]


@pytest.mark.parametrize("reader, error, hint", [
    (read_lines, CorpusError, "corpus files must be UTF-8"),
    (read_sentence_lines, SentenceFileError, "iconv -f latin1"),
])
def test_each_caller_keeps_its_error_and_hint(tmp_path, reader, error,
                                               hint):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"ok\nna\xefve\n")
    with pytest.raises(error, match=(
            r"latin1.txt, line 2: not valid UTF-8 at byte 2 of the line "
            r"\(invalid continuation byte; near b'na\\xefve\\n'\); ")) as e:
        list(reader(str(path)))
    assert hint in str(e.value)
    with pytest.raises(error, match=r"nope.txt: no such file \(expected "):
        list(reader(str(tmp_path / "nope.txt")))
    with pytest.raises(error, match="is a directory"):
        list(reader(str(tmp_path)))
