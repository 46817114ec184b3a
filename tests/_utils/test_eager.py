"""Inside a ``tf.compat.v1`` graph the model would compute with
re-initialised weights: it refuses, saying what to do."""

import subprocess

import numpy as np
import pytest
import tensorflow as tf

from helpers import REPO_ROOT, python_argv, user_env

from bilm_keras import Batcher, BidirectionalLanguageModel, BulkEmbedder
from bilm_keras._utils.eager import GraphModeError

ADVICE = (r"expected TensorFlow 2's eager mode, found a tf.compat.v1 graph; "
          r"bilm_keras runs eagerly \(TF2\): build and call it outside "
          r"`with tf.compat.v1.Graph\(\).as_default\(\):` and do not call "
          r"tf.compat.v1.disable_eager_execution\(\)")


@pytest.fixture(scope="module")
def files(model_dir):
    return str(model_dir / "options.json"), str(model_dir / "lm_weights.hdf5")


@pytest.fixture(scope="module")
def bilm(fixture_bilm):
    """The session's stateless fixture model (its graphs traced once)."""
    return fixture_bilm


@pytest.fixture(scope="module")
def ids(model_dir):
    return Batcher(str(model_dir / "vocab_test.txt"), 50).batch_sentences(
        [["The", "cat", "sat", "."]])


def test_building_in_a_v1_graph_is_refused(files, bilm):
    with tf.compat.v1.Graph().as_default():
        with pytest.raises(GraphModeError,
                           match=r"^BidirectionalLanguageModel: " + ADVICE):
            BidirectionalLanguageModel(*files)
        with pytest.raises(GraphModeError, match=r"^BidirectionalLanguage"
                                                 r"Model.from_backbone: "):
            BidirectionalLanguageModel.from_backbone(bilm.backbone)
        with pytest.raises(GraphModeError, match=r"^BulkEmbedder: "):
            BulkEmbedder(bilm.backbone)
    assert issubclass(GraphModeError, RuntimeError)


def test_calling_in_a_v1_graph_is_refused(bilm, ids):
    with tf.compat.v1.Graph().as_default():
        with pytest.raises(GraphModeError, match=r"^BidirectionalLanguage"
                                                 r"Model call: " + ADVICE):
            bilm(ids)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_a_tf2_function_may_call_it(bilm, ids):
    @tf.function
    def embed(x):
        return bilm(x)["lm_embeddings"]

    np.testing.assert_allclose(embed(ids).numpy(),
                               bilm(ids)["lm_embeddings"].numpy(), atol=1e-6)


@pytest.mark.slow  # its own process (~2 s); the v1-graph tests check the
# same guard in this one
def test_eager_disabled_is_refused(files):
    # disabling eager execution is process-wide: a process of its own
    code = (
        "import sys, tensorflow as tf\n"
        "tf.compat.v1.disable_eager_execution()\n"
        "from bilm_keras import BidirectionalLanguageModel\n"
        "try:\n"
        "    BidirectionalLanguageModel(sys.argv[1], sys.argv[2])\n"
        "except RuntimeError as e:\n"
        "    print(type(e).__name__, e)\n")
    # (a child of the command server, which made no eager context)
    env = dict(user_env(), TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(python_argv(env) + ["-c", code, *files],
                          cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(
        "GraphModeError BidirectionalLanguageModel: expected TensorFlow 2's "
        "eager mode"), proc.stdout
