"""``BidirectionalLanguageModel.from_pretrained``: a published model by
name, served by a local mirror (never the real network), embeds exactly
as the same files passed by path: bit for bit for a bilm-tf model, and a
ManyLangs model reproduces upstream's ``reference.hdf5`` to 1e-5 as the
by-path converted one does. Token input takes the model's vocabulary."""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments)

import re

import numpy as np
import pytest
from model_server import (  # noqa: F401 (fixtures)
    BILM_TF_ZIP,
    ELMO_SMALL_WEIGHTS,
    ZH_ZIP,
    cache_contents,
    cache_dir,
    mirrored,
    model_server,
    served_files,
)

from helpers import counted_calls, load_reference_embeddings

from bilm_keras import (
    BidirectionalLanguageModel,
    ELMoEmbedding,
    list_models,
    resolve_model,
)
from bilm_keras.options import BiLMOptions
from bilm_keras.pretrained import PretrainedModelError
from bilm_keras.weights import bilm_tf_hdf5

#: ELMoForManyLangs' fixture: upstream's numbers, to this tolerance
MANYLANGS_ATOL = 1e-5


def _assert_identical(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_elmo_small_by_name_equals_the_files_by_path(
        mirrored, cache_dir, model_dir, fixture_bilm):
    bilm = BidirectionalLanguageModel.from_pretrained("elmo-small")
    assert bilm.pretrained.name == "elmo-small"
    assert bilm.pretrained.cached and bilm.pretrained.format == "bilm-tf"
    assert bilm.pretrained.directory == str(cache_dir / "models"
                                            / "elmo-small")
    assert bilm.options == fixture_bilm.options
    lists, expected = load_reference_embeddings(model_dir)
    sentences = [sentence for lst in lists for sentence in lst]
    by_name = bilm.embed_sentences(sentences)
    by_path = fixture_bilm.embed_sentences(sentences)
    _assert_identical(by_name, by_path)  # bit for bit: the same files
    # and they are bilm-tf's numbers (the top layer of each list's first
    # sentence: bilm-tf's later batches started from the earlier ones'
    # states), to the fixture's 1e-6
    for k in range(len(lists)):
        first = by_name[sum(len(x) for x in lists[:k])]
        np.testing.assert_allclose(first[-1], expected[k][0], rtol=0,
                                   atol=1e-6)
    # the cache, listed
    [listed] = [m for m in list_models() if m.model.name == "elmo-small"]
    assert listed.directory == bilm.pretrained.directory
    assert mirrored.requests[ELMO_SMALL_WEIGHTS] == 1


@pytest.mark.slow  # resolve_model's own tests cover the cache quickly
def test_a_cached_model_needs_no_server(mirrored, cache_dir, fixture_bilm,
                                        model_dir):
    first = BidirectionalLanguageModel.from_pretrained("elmo-small")
    mirrored.stop()
    again = BidirectionalLanguageModel.from_pretrained("elmo-small")
    assert again.pretrained == first.pretrained
    sentences = load_reference_embeddings(model_dir)[0][0]
    _assert_identical(again.embed_sentences(sentences),
                      fixture_bilm.embed_sentences(sentences))


@pytest.mark.slow  # quick: test_resolve_model's conversion, byte-equal
def test_manylangs_zh_reproduces_upstream_as_the_converted_files_do(
        mirrored, cache_dir, manylangs_converted, manylangs_reference):
    bilm = BidirectionalLanguageModel.from_pretrained("manylangs-zh")
    assert bilm.pretrained.format == "elmoformanylangs"
    assert mirrored.requests[ZH_ZIP] == 1
    sentences = manylangs_reference["sentences"]
    got = bilm.embed_sentences(sentences)
    for i, (g, want) in enumerate(zip(got, manylangs_reference["all"])):
        np.testing.assert_allclose(g, want, rtol=0, atol=MANYLANGS_ATOL,
                                   err_msg=f"sentence {i}")
    by_path = BidirectionalLanguageModel(
        manylangs_converted["options_file"],
        manylangs_converted["weight_file"])
    _assert_identical(got, by_path.embed_sentences(sentences))
    assert cache_contents(cache_dir) == {"models": ["manylangs-zh"],
                                         "tmp": []}


@pytest.mark.slow
def test_token_input_uses_the_models_vocabulary(model_server, cache_dir,
                                                bilm_fixtures):
    # NLPL's bilm-tf zips ship vocab.txt beside the weights
    url = model_server.url + BILM_TF_ZIP
    chars = BidirectionalLanguageModel.from_pretrained(url)
    tokens = BidirectionalLanguageModel.from_pretrained(
        url, use_character_inputs=False)
    assert tokens.vocab_file == chars.pretrained.vocab_file is not None
    assert not tokens.use_character_inputs
    words = (bilm_fixtures / "model" / "vocab_test.txt").read_text(
        "utf-8").split()[3:]
    sentences = [words[:5], words[5:8], words[8:20]]
    # bilm-tf's usage_token.py: the same vectors without the char-CNN
    for t, c in zip(tokens.embed_sentences(sentences),
                    chars.embed_sentences(sentences)):
        np.testing.assert_allclose(t, c, rtol=0, atol=1e-5)
    # nothing of the token table is left behind
    assert cache_contents(cache_dir)["tmp"] == []


def test_token_input_without_a_vocabulary_fails_before_a_download(
        mirrored, cache_dir):
    with pytest.raises(ValueError, match="^elmo-small: no vocabulary: the "
                                         "model ships none, and token input "
                                         "needs one: pass it with "
                                         "vocab_file=$"):
        BidirectionalLanguageModel.from_pretrained(
            "elmo-small", use_character_inputs=False)
    assert sum(mirrored.requests.values()) == 0
    assert not cache_dir.exists()


def test_a_model_folder_is_read_once(model_dir, monkeypatch):
    # the options as resolve_model parsed them, the weights from one handle
    parsed = counted_calls(monkeypatch, BiLMOptions, "from_json")
    opened = counted_calls(monkeypatch, bilm_tf_hdf5, "_open_hdf5")
    bilm = BidirectionalLanguageModel.from_pretrained(model_dir)
    assert parsed == [str(model_dir / "options.json")]
    assert opened == [str(model_dir / "lm_weights.hdf5")]
    assert bilm.options == bilm.pretrained.options


@pytest.mark.parametrize("load", [BidirectionalLanguageModel.from_pretrained,
                                  ELMoEmbedding.from_pretrained])
def test_a_damaged_run_gives_the_detections_own_error(tmp_path, cache_dir,
                                                      load):
    # not "expected a model ... found none" from reading it as published
    save_dir = tmp_path / "run"
    save_dir.mkdir()
    for name in ("model-1.index", "model-1.data-00000-of-00001"):
        (save_dir / name).write_bytes(b"damaged")
    with pytest.raises(ValueError,
                       match=rf"^{re.escape(str(save_dir))}: no "
                             r"checkpoint reads whole \(model-1\.index: "
                             r"unreadable"):
        load(save_dir)
    assert len(list(save_dir.iterdir())) == 2
    assert not cache_dir.exists()


def test_an_unknown_name_says_how_to_list_them(mirrored, cache_dir):
    with pytest.raises(PretrainedModelError) as error:
        BidirectionalLanguageModel.from_pretrained("elmo-smal")
    assert "\n" not in str(error.value)
    assert "unknown model name (did you mean elmo-small" in str(error.value)
    assert "`bilm-keras models`" in str(error.value)
    assert sum(mirrored.requests.values()) == 0
    assert not cache_dir.exists()


def test_resolve_model_is_exported_lazily():
    import bilm_keras
    from bilm_keras.pretrained import list_models as listing

    assert bilm_keras.resolve_model is resolve_model
    assert bilm_keras.list_models is listing
    assert {"resolve_model", "list_models"} <= set(bilm_keras.__all__)
