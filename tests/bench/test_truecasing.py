"""``bench/truecasing.py``: its reader, labels and scores on hand-made
cases, and ``--quick`` end to end on the committed sample (no figure
asserted)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import truecasing  # bench/, on the path through setup.cfg
from helpers import REPO_ROOT

SAMPLE = REPO_ROOT / "tests" / "fixtures" / "truecasing"


@pytest.mark.parametrize("token, expected", [
    ("python", "lower"), (",", "lower"), ("3", "lower"),
    ("Python", "title"), ("I", "title"), ("A", "title"),
    ("HTTP", "upper"), ("UTF", "upper"),
    ("TextIOWrapper", "mixed"), ("macOS", "mixed"), ("iPhone", "mixed"),
])
def test_case_class(token, expected):
    assert truecasing.CLASSES[truecasing.case_class(token)] == expected


def test_inline_markup_shows_its_text():
    text = ("Use :func:`~json.dumps` or :class:`a title <json.JSONEncoder>`"
            " with ``indent=2``, see `the spec <https://x.org>`_ and "
            "*not* **this** |version|.")
    assert truecasing.strip_inline_markup(text) == (
        "Use dumps or a title with indent=2, see the spec and not this .")


def test_prose_paragraphs_drop_literal_blocks_and_directives():
    text = (".. function:: dumps(obj)\n\n"
            "   Serialize obj to a string.  It reads::\n\n"
            "      >>> dumps(1)\n      '1'\n\n"
            "      still code\n\n"
            "   Back to prose after the block.\n\n"
            "Heading\n=======\n\n"
            "+---+---+\n| a | b |\n+---+---+\n")
    assert truecasing.prose_paragraphs(text, rest=True) == [
        "Serialize obj to a string.  It reads::",
        "Back to prose after the block."]


def test_document_sentences_keep_case_and_split_sentences():
    sentences = truecasing.document_sentences(
        "The JSON module reads files.  Python writes them too!\n", False)
    assert sentences == [["The", "JSON", "module", "reads", "files", "."],
                         ["Python", "writes", "them", "too", "!"]]


def test_f1_scores_by_hand():
    # gold:      Title lower UPPER | Title mixed (pad)
    # predicted: Title Title lower | lower mixed
    gold = np.array([[1, 0, 2], [1, 3, 0]])
    predicted = np.array([[1, 1, 0], [0, 3, 2]])
    scores = truecasing.f1_scores(gold, predicted, np.array([3, 2]))
    # all tokens: right 2 (Title, mixed), predicted 3, gold 4
    assert scores["f1"] == round(2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4), 4)
    # without the first tokens: right 1 (mixed), predicted 2, gold 2
    assert scores["f1_not_first"] == 0.5
    assert scores["accuracy"] == 0.4  # 2 of 5 real tokens
    assert scores["f1_title"] == round(2 * 0.5 * 0.5, 4)
    assert scores["f1_upper"] == 0.0 and scores["f1_mixed"] == 1.0


def test_a_corpus_folder_without_rest_files_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"--corpus {tmp_path}: "
                       r"expected reStructuredText files"):
        truecasing.read_rest_folder(str(tmp_path))


@pytest.mark.nightly
def test_quick_run_reports_every_tagger(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "truecasing.py"),
         "--quick", "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=900,
        env=dict(os.environ, KERAS_BACKEND="tensorflow",
                 TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    data = report["data"]
    n_docs = len(truecasing.read_rest_folder(str(SAMPLE / "rst")))
    assert data["lm_sentences"] == n_docs - 30  # the in-domain test out
    assert data["task_train_sentences"] == 60
    assert data["test_heldout_sentences"] == len(
        truecasing.read_plain_text(str(SAMPLE / "heldout.txt")))
    assert report["lm"]["steps"] == 5 and report["lm"]["parameters"] > 0
    assert (tmp_path / "lm" / "lm_weights.hdf5").exists()
    assert set(report["taggers"]) == set(truecasing.TAGGERS)
    for tagger in report["taggers"].values():
        for key in ("f1", "f1_not_first", "accuracy"):
            assert 0 <= tagger["test_heldout_mean"][key] <= 1
    mix = report["taggers"]["words+elmo_mix"]["runs"][0]
    assert len(mix["mix_weights"]) == report["lm_layers"] == 3
    assert abs(sum(mix["mix_weights"]) - 1) < 1e-3
