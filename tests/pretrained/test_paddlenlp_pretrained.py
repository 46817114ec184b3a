"""A PaddleNLP ``.pdparams`` as a SPEC: converted once into the cache (its
vocabulary with it, from the ``vocab*.txt`` beside it), then embedding as
PaddleNLP's ``encode`` (tests/fixtures/paddlenlp_elmo); a ``.pdparams``
holding code is refused there too, before it can run."""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments)

import os
import pathlib
import pickle
import shutil

import numpy as np
import pytest
from model_server import cache_contents, cache_dir  # noqa: F401 (fixtures)

from bilm_keras import BidirectionalLanguageModel, resolve_model
from bilm_keras.pretrained import PretrainedModelError

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / \
    "paddlenlp_elmo"


def _run_dir(tmp_path):
    """A PaddleNLP run's files as its user has them."""
    run = tmp_path / "checkpoints"
    run.mkdir()
    shutil.copy(FIXTURES / "elmo.pdparams", run / "final.pdparams")
    shutil.copy(FIXTURES / "vocab.txt", run / "vocab-15w.txt")
    return run / "final.pdparams"


def test_a_pdparams_as_a_spec_is_converted_once(cache_dir, tmp_path):
    path = _run_dir(tmp_path)
    model = resolve_model(str(path), cache_dir=cache_dir)
    assert model.format == "paddlenlp" and model.cached
    with open(model.vocab_file, encoding="utf-8") as f:
        assert [next(f).strip() for _ in range(5)] == [
            "<UNK>", "<S>", "</S>", "<PAD>", "的"]
    assert resolve_model(str(path), cache_dir=cache_dir) == model
    assert len(cache_contents(cache_dir)["models"]) == 1


@pytest.mark.slow  # the quick tier has the conversion and the model
def test_a_pdparams_as_a_spec_embeds_as_encode(cache_dir, tmp_path):
    path = _run_dir(tmp_path)
    bilm = BidirectionalLanguageModel.from_pretrained(str(path),
                                                      cache_dir=cache_dir)
    sentences = [line.split() for line in (
        FIXTURES / "sentences.txt").read_text("utf-8").splitlines()]
    with np.load(FIXTURES / "embeddings.npz") as expected:
        for i, found in enumerate(bilm.embed_sentences(sentences)):
            np.testing.assert_allclose(found, expected[f"sentence_{i}"],
                                       rtol=0, atol=1e-5)
    assert len(cache_contents(cache_dir)["models"]) == 1


class _RunsCode:
    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def test_a_pdparams_holding_code_is_refused(cache_dir, tmp_path):
    path = _run_dir(tmp_path)
    marker = tmp_path / "ran"
    with open(path, "rb") as f:
        state = pickle.load(f)
    state["_linear_layer.bias"] = _RunsCode(f"touch {marker}")
    path.write_bytes(pickle.dumps(state, protocol=4))
    with pytest.raises(PretrainedModelError,
                       match=r"(posix|os)\.system, which is not a numpy "
                             r"array") as e:
        BidirectionalLanguageModel.from_pretrained(str(path),
                                                   cache_dir=cache_dir)
    assert "\n" not in str(e.value)
    assert not marker.exists()
    assert cache_contents(cache_dir)["models"] == []
