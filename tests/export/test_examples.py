"""The two export examples run end to end at a small size (subprocesses)."""

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO_ROOT

# each trains a Keras model on the fixture export in a fresh process
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def savedmodel(fixture_export):
    return fixture_export


def _run(script, args, bilm_fixtures):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               BILM_FIXTURES=str(bilm_fixtures))
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / script), *args],
        capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, proc.stdout[-2000:]
    return json.loads(line[-1][len("RESULT "):])


def test_keras_text_classifier(savedmodel, bilm_fixtures):
    result = _run("keras_text_classifier.py",
                  ["--savedmodel", savedmodel, "--epochs", "6",
                   "--max_sentences", "16"], bilm_fixtures)
    assert result["n_train"] + result["n_test"] == 32
    assert result["loss"][-1] < result["loss"][0]
    assert result["scalar_mix_before"] == [0.0, 0.0, 0.0]
    assert result["scalar_mix_after"] != result["scalar_mix_before"]


def test_elmo_plus_word_embeddings(savedmodel, bilm_fixtures):
    result = _run("elmo_plus_word_embeddings.py",
                  ["--savedmodel", savedmodel, "--steps", "25",
                   "--n_sentences", "32"], bilm_fixtures)
    loss = result["loss"]
    assert len(loss) == 25
    assert loss[-1] < 0.5 * loss[0], loss
    assert result["accuracy"] > 0.5
