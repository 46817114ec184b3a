"""``EmbedSentences`` / ``BiLMModelHandler``
(:mod:`bilm_keras.embedding.beam_inference`) in a Beam pipeline on this
process: bilm-tf's reference embeddings, a mix, token input, keys kept,
a model given by its folder (through ``resolve_model``), bad settings."""

import json
import os
import pickle
import uuid

import h5py
import numpy as np
import pytest

from helpers import require_extra

beam = require_extra("apache_beam", "beam")

from bilm_keras._utils.settings import SettingError  # noqa: E402
from bilm_keras.embedding.beam_inference import (  # noqa: E402
    BiLMModelHandler,
    EmbedSentences,
)
from bilm_keras.embedding.outputs import EmbeddingSpec  # noqa: E402


def _save(element, folder):
    with open(os.path.join(folder, uuid.uuid4().hex), "wb") as f:
        pickle.dump(element, f)


def _run(elements, transform, folder):
    """The transform's output on this process, as a dict by key (the
    pipeline's functions are pickled: the outputs come back as files)."""
    folder.mkdir()
    with beam.Pipeline() as p:
        _ = (p | beam.Create(elements) | transform
             | beam.Map(_save, str(folder)))
    got = {}
    for name in os.listdir(folder):
        with open(folder / name, "rb") as f:
            key, array = pickle.load(f)
        assert key not in got
        got[key] = array
    return got


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_top_layer_is_bilm_tfs_reference(model_dir, tmp_path):
    # the first sentence of each fixture list, from zero states as bilm-tf
    # computed it; keys of any kind pass through; the model by its folder
    with open(model_dir / "lm_embeddings_sentences.json") as f:
        raw = json.load(f)
    keys = [("doc", 7), "x", 3]
    got = _run([(key, raw[k][0].split()) for k, key in enumerate(keys)],
               EmbedSentences(str(model_dir), spec=EmbeddingSpec(
                   output="top"), batch_sentences=2), tmp_path / "out")
    assert sorted(map(str, got)) == sorted(map(str, keys))
    for k, key in enumerate(keys):
        with h5py.File(model_dir / f"lm_embeddings_{k}.hdf5", "r") as f:
            ref = f["0"][...]  # (2, n, 16): forward, backward top layer
        np.testing.assert_allclose(
            got[key], np.concatenate([ref[0], ref[1]], axis=-1),
            rtol=0, atol=1e-6)


@pytest.mark.slow
def test_mix_of_token_input_is_a_numpy_mix_of_all_layers(model_dir,
                                                          tmp_path,
                                                          fixture_bilm):
    from bilm_keras import dump_token_embeddings

    sentences = [["The", "cat", "sat", "."], [], ["the", "cat"]]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("<S>\n</S>\nThe\ncat\nsat\n.\nthe\n", encoding="utf-8")
    table = tmp_path / "tokens.hdf5"
    dump_token_embeddings(str(vocab), str(model_dir / "options.json"),
                          str(model_dir / "lm_weights.hdf5"), str(table))
    s, gamma = [0.2, 0.5, 0.3], 0.7
    got = _run(list(enumerate(sentences)), EmbedSentences(
        options_file=model_dir / "options.json",
        weight_file=model_dir / "lm_weights.hdf5", vocab_file=vocab,
        embedding_weight_file=table,
        spec=EmbeddingSpec(output="mix", mix_weights=s, gamma=gamma)),
        tmp_path / "out")
    model = fixture_bilm  # the session's model of the same files
    for i, layers in enumerate(model.embed_sentences(sentences)):
        want = gamma * np.einsum("k,knd->nd", s, layers.astype(np.float64))
        assert got[i].shape == want.shape == (len(sentences[i]), 32)
        np.testing.assert_allclose(got[i], want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("arguments,match", [
    ({}, "either model .* found neither"),
    ({"model": "elmo-original", "options_file": "o.json"}, "found both"),
    ({"options_file": "o.json"}, "weight_file: expected the weights"),
    ({"model": "m", "spec": {"output": "top"}}, "spec: expected an "
                                                "EmbeddingSpec"),
    ({"model": "m", "batch_sentences": 0}, "batch_sentences: expected an "
                                           "integer >= 1"),
    ({"model": "m", "batch_size": -1}, "batch_size: expected"),
])
def test_bad_settings_are_named_before_any_worker_starts(arguments, match):
    with pytest.raises(SettingError, match=match):
        BiLMModelHandler(**arguments)


def test_batches_are_the_embedders_chunks():
    handler = BiLMModelHandler("elmo-original", batch_sentences=512)
    assert handler.batch_elements_kwargs() == {"min_batch_size": 512,
                                               "max_batch_size": 512}
    assert not handler.share_model_across_processes()
    assert BiLMModelHandler("m", large_model=True
                            ).share_model_across_processes()


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_bfloat16_workers_near_float32(model_dir, tmp_path):
    """``precision="bfloat16"`` on the workers: the vectors within the
    bounds of float32's (tests/helpers.py ``assert_near_float32``)."""
    from helpers import assert_near_float32, load_reference_embeddings

    sentences = [s for batch in load_reference_embeddings(model_dir)[0]
                 for s in batch][:9]
    elements = list(enumerate(sentences))
    got = {}
    for precision in ("float32", "bfloat16"):
        got[precision] = _run(elements, EmbedSentences(
            str(model_dir), precision=precision, batch_sentences=4),
            tmp_path / precision)
    keys = sorted(got["float32"])
    assert_near_float32([got["float32"][k] for k in keys],
                        [got["bfloat16"][k] for k in keys], "layers")
    assert any(np.abs(got["float32"][k] - got["bfloat16"][k]).max() > 1e-5
               for k in keys)


def test_unknown_precision_is_named():
    with pytest.raises(SettingError, match="precision: expected one of "
                                           "float32, bfloat16"):
        BiLMModelHandler("m", precision="fp8")
