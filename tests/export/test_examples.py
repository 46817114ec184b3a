"""The two Keras examples run end to end at a small size: each script's
``main(argv)``, as its command line calls it, in this process (the
examples need no fresh process: TensorFlow already imported here is one
import fewer per example), on the fixture model."""

import pytest

from helpers import load_script

# each trains a Keras model on the fixture model: the nightly tier, with
# the other examples' end-to-end runs
pytestmark = pytest.mark.nightly


def _run(script, args, bilm_fixtures, monkeypatch, capsys):
    """``examples/SCRIPT ARGS``: its ``RESULT`` (what it returns and what
    its last line prints)."""
    monkeypatch.setenv("BILM_FIXTURES", str(bilm_fixtures))
    result = load_script(f"examples/{script}").main(args)
    lines = capsys.readouterr().out.splitlines()
    assert lines and lines[-1].startswith("RESULT "), lines[-3:]
    return result


def test_keras_text_classifier(model_dir, bilm_fixtures, monkeypatch,
                               capsys):
    result = _run("keras_text_classifier.py",
                  ["--model", str(model_dir), "--epochs", "6",
                   "--max_sentences", "16"], bilm_fixtures, monkeypatch,
                  capsys)
    assert result["n_train"] + result["n_test"] == 32
    assert result["loss"][-1] < result["loss"][0]
    assert result["scalar_mix_before"] == [0.0, 0.0, 0.0]
    assert result["scalar_mix_after"] != result["scalar_mix_before"]


def test_elmo_plus_word_embeddings(model_dir, bilm_fixtures, monkeypatch,
                                   capsys):
    result = _run("elmo_plus_word_embeddings.py",
                  ["--model", str(model_dir), "--steps", "25",
                   "--n_sentences", "32"], bilm_fixtures, monkeypatch,
                  capsys)
    loss = result["loss"]
    assert len(loss) == 25
    assert loss[-1] < 0.5 * loss[0], loss
    assert result["accuracy"] > 0.5
