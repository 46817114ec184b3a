"""Models loaded for serving: named by the registry, the folder or
``NAME=``, warmed up, and embedding as ``embed_sentences`` does."""

import numpy as np
import pytest

from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.serving.served_model import load_served_models, served_model


@pytest.mark.slow
def test_a_folder_is_named_by_its_base_name_or_by_name(model_dir):
    models = load_served_models([str(model_dir), f"tiny={model_dir}"],
                                max_batch_tokens=64)
    assert list(models) == ["model", "tiny"]
    assert models["tiny"].info() == {"name": "tiny", "language": None,
                                      "layers": 3, "dim": 32}


@pytest.mark.slow
def test_two_models_under_one_name_are_refused(model_dir):
    with pytest.raises(ValueError, match="two models named 'model'; name "
                                         "them with --model NAME=SPEC"):
        load_served_models([str(model_dir), f"model={model_dir}"],
                           max_batch_tokens=64)


@pytest.mark.slow
def test_embed_is_the_bulk_path(fixture_bilm):
    model = served_model("m", fixture_bilm, max_batch_tokens=8)
    sentences = [["a", "b", "c"], ["d"], []]
    spec = EmbeddingSpec(output="average")
    got = model.embed(sentences, spec)
    want = fixture_bilm.embed_sentences(sentences, output="average")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-6, rtol=0)
