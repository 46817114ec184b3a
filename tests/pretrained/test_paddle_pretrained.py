"""Paddle models as a SPEC: ``paddle-baike-zh`` by name through a local
mirror serving the Fluid fixture checkpoint at the release's URL path,
and a persistables directory given by path, converted once into the cache
and reproducing Paddle 1.8.5's own outputs (tests/fixtures/paddle_baike);
the vocabulary the release lacks is asked for in one line, before any
download."""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments)

import numpy as np
import pytest
from model_server import (  # noqa: F401 (fixtures)
    BAIKE_TAR,
    cache_contents,
    cache_dir,
    mirrored,
    model_server,
    served_files,
)

from bilm_keras import (
    BidirectionalLanguageModel,
    ELMoEmbedding,
    ELMoPreprocessor,
    cli,
    resolve_model,
)
from bilm_keras.pretrained import PretrainedModelError, registered_model
from bilm_keras.pretrained.resolution import PDPARAMS, check_model_spec

ATOL = 1e-5


def _sentences_and_reference(fixtures):
    sentences = [line.split() for line in (
        fixtures / "sentences.txt").read_text("utf-8").splitlines()]
    with np.load(fixtures / "reference.npz") as f:
        return sentences, dict(f)


def _assert_reproduces_paddle(bilm, fixtures, vocab_file=None):
    """bilm-tf's three layers at the word positions equal Paddle's."""
    sentences, ref = _sentences_and_reference(fixtures)
    for i, v in enumerate(bilm.embed_sentences(sentences,
                                               vocab_file=vocab_file)):
        words = slice(1, len(ref[f"s{i}_ids"]) - 1)
        for layer in (1, 2):
            expected = np.concatenate(
                [ref[f"s{i}_fw_{layer}"][words],
                 ref[f"s{i}_bw_{layer}"][::-1][words]], -1)
            np.testing.assert_allclose(v[layer], expected, rtol=0,
                                       atol=ATOL)


def test_the_registry_row():
    row = registered_model("paddle-baike-zh")
    assert row.format == "paddle-fluid" and row.language_code == "zh"
    assert row.archive_url == ("https://dureader.gz.bcebos.com/elmo/"
                               "baike_elmo_checkpoint.tar.gz")
    assert "vocabulary_min5k.txt" in row.vocab_note
    assert row.takes_words and row.ships_vocabulary is False


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_by_name_through_the_mirror(mirrored, cache_dir,
                                    paddle_baike_fixtures):
    vocab = paddle_baike_fixtures / "vocab.txt"
    bilm = BidirectionalLanguageModel.from_pretrained(
        "paddle-baike-zh", vocab_file=vocab)
    assert bilm.pretrained.format == "paddle-fluid"
    assert bilm.pretrained.vocab_file is None  # the release has none
    assert not bilm.use_character_inputs
    _assert_reproduces_paddle(bilm, paddle_baike_fixtures)
    # converted once: the second call reads the cache, no request
    again = BidirectionalLanguageModel.from_pretrained(
        "paddle-baike-zh", vocab_file=vocab)
    assert again.pretrained.directory == bilm.pretrained.directory
    assert mirrored.requests[BAIKE_TAR] == 1
    assert cache_contents(cache_dir)["models"] == ["paddle-baike-zh"]


@pytest.mark.parametrize("load,flag", [
    (BidirectionalLanguageModel.from_pretrained, "pass it with vocab_file="),
    (ELMoEmbedding.from_pretrained, "pass it with vocab_file="),
    # it takes no vocabulary: a folder holding one
    (ELMoPreprocessor.from_preset,
     r"give a model folder holding it as vocab\*\.txt"),
])
def test_without_a_vocabulary_one_line_before_a_download(mirrored,
                                                         cache_dir, load,
                                                         flag):
    # the registry's row says it: nothing is fetched, nothing is cached
    with pytest.raises(ValueError,
                       match=r"^paddle-baike-zh: no vocabulary: the model "
                             r"ships none, and its word input needs one: "
                             rf"{flag} \(vocabulary_min5k\.txt .*\)$"):
        load("paddle-baike-zh")
    assert sum(mirrored.requests.values()) == 0
    assert not cache_dir.exists()


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_embed_by_name_through_the_mirror(mirrored, cache_dir,
                                          paddle_baike_fixtures, tmp_path,
                                          capsys):
    import h5py

    sentences, ref = _sentences_and_reference(paddle_baike_fixtures)
    dataset = tmp_path / "sentences.txt"
    dataset.write_text("\n".join(" ".join(s) for s in sentences) + "\n",
                       encoding="utf-8")
    out = tmp_path / "out.hdf5"
    code = cli.main(["embed", "--model", "paddle-baike-zh", "--vocab_file",
                     str(paddle_baike_fixtures / "vocab.txt"),
                     "--dataset_file", str(dataset), "--outfile", str(out)])
    assert code == 0, capsys.readouterr().err
    with h5py.File(out, "r") as f:
        for i in range(len(sentences)):
            words = slice(1, len(ref[f"s{i}_ids"]) - 1)
            np.testing.assert_allclose(
                f[str(i)][2][:, :8], ref[f"s{i}_fw_2"][words], rtol=0,
                atol=ATOL)


@pytest.mark.slow
def test_a_fluid_directory_as_a_spec(cache_dir, paddle_baike_fixtures,
                                     tmp_path):
    """A persistables directory with its vocabulary beside the variables
    is converted once into the cache (vocab.txt with it)."""
    import shutil

    ckpt = tmp_path / "490001"
    shutil.copytree(paddle_baike_fixtures / "checkpoint", ckpt)
    shutil.copy(paddle_baike_fixtures / "vocab.txt", ckpt / "vocab.txt")
    model = resolve_model(str(ckpt), cache_dir=cache_dir)
    assert model.format == "paddle-fluid" and model.cached
    assert model.vocab_file.endswith("vocab.txt")
    bilm = BidirectionalLanguageModel.from_pretrained(str(ckpt),
                                                      cache_dir=cache_dir)
    _assert_reproduces_paddle(bilm, paddle_baike_fixtures)


def test_a_broken_fluid_directory_is_one_line(cache_dir,
                                              paddle_baike_fixtures,
                                              tmp_path):
    import shutil

    ckpt = tmp_path / "ckpt"
    shutil.copytree(paddle_baike_fixtures / "checkpoint", ckpt)
    (ckpt / "softmax_bias").write_bytes(b"\0" * 7)
    with pytest.raises(PretrainedModelError,
                       match=r"cannot convert the Paddle model: .*"
                             r"softmax_bias: lod_level: expected 8 bytes, "
                             r"found 3 \(file cut short\)"):
        resolve_model(str(ckpt), cache_dir=cache_dir)
    assert cache_contents(cache_dir)["models"] == []


def test_a_pdparams_path_is_a_spec_of_its_own(tmp_path):
    path = tmp_path / "elmo.pdparams"
    path.write_bytes(b"")
    assert check_model_spec(str(path)) == PDPARAMS
