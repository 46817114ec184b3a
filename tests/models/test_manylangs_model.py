"""A converted ELMoForManyLangs model in the one backbone: the fixture's
tiny.model, converted as it is, gives the embeddings upstream's own
``Embedder.sents2elmo`` computed (reference.hdf5: one batch from zero
states) through every Python path and ``bilm-keras embed``,
whatever the batch size and order."""

import json
import pathlib

import h5py
import numpy as np
import pytest

from bilm_keras import (
    BidirectionalLanguageModel,
    dump_token_embeddings,
)
from bilm_keras import cli
from bilm_keras.data.manylangs_batcher import ManyLangsBatcher
from bilm_keras.weights.bilm_tf_hdf5 import save_bilm_tf_hdf5

ATOL = 1e-5
P = 16  # the fixture's projection_dim


@pytest.fixture(scope="module")
def converted(manylangs_converted):
    return manylangs_converted


@pytest.fixture(scope="module")
def reference(manylangs_reference):
    return manylangs_reference


@pytest.fixture(scope="module")
def bilm(converted):
    return BidirectionalLanguageModel(converted["options_file"],
                                      converted["weight_file"])


def _assert_close(got, want, what):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{what}, sentence {i}"
        np.testing.assert_allclose(g, w, rtol=0, atol=ATOL,
                                   err_msg=f"{what}, sentence {i}")


@pytest.mark.parametrize("batch_size", [
    pytest.param(1, marks=pytest.mark.slow), 4,
    pytest.param(64, marks=pytest.mark.slow)])
def test_embed_sentences_all(bilm, reference, batch_size):
    got = bilm.embed_sentences(reference["sentences"], batch_size=batch_size,
                               output="all")
    _assert_close(got, reference["all"], f"batch_size={batch_size}")


def test_embed_sentences_average_and_layers(bilm, reference):
    got = bilm.embed_sentences(reference["sentences"], output="average")
    _assert_close(got, reference["average"], "average")
    # sents2elmo(output_layer=k) is layers=[k]
    got = bilm.embed_sentences(reference["sentences"], output="all",
                               layers=[2, 0])
    _assert_close(got, [w[[2, 0]] for w in reference["all"]], "layers=[2, 0]")


def test_stateless_in_any_order(bilm, reference):
    """Shuffled, in batches of 3, twice: the same numbers (upstream's
    second call differs: its states carry over)."""
    sentences = reference["sentences"]
    order = np.random.default_rng(16).permutation(len(sentences))
    for _ in range(2):
        got = list(bilm.iter_embeddings([sentences[i] for i in order],
                                        batch_size=3, chunk_size=7))
        _assert_close([got[list(order).index(i)]
                       for i in range(len(sentences))],
                      reference["all"], "shuffled")
    carried = max(np.abs(c - w).max()
                  for c, w in zip(reference["carryover"], reference["all"]))
    assert carried > 1.0  # what stateless embedding removes


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_backbone_call_on_batcher_ids(bilm, reference):
    sentences = reference["sentences"]
    batcher = bilm.make_batcher()
    assert isinstance(batcher, ManyLangsBatcher)
    ids = batcher.batch_sentences(sentences)  # (15, 27, 21)
    out = bilm(ids)
    layers = out["lm_embeddings"].numpy()  # (B, 3, T, 2P)
    lengths = out["lengths"].numpy()
    np.testing.assert_array_equal(lengths, [len(s) for s in sentences])
    _assert_close([layers[i, :, :n] for i, n in enumerate(lengths)],
                  reference["all"], "bilm(ids)")
    # upstream's own ids (+1) give the same
    for i in (0, 4, 11):
        out = bilm(reference["ids"][i][None] + 1)
        np.testing.assert_allclose(out["lm_embeddings"].numpy()[0],
                                   reference["all"][i], rtol=0, atol=ATOL)


def test_save_writes_the_converted_layout(bilm, converted, tmp_path):
    """The weight table writes back what it read: word_embed and char_embed
    without their padding rows, the projection over [word ; chars]."""
    out = tmp_path / "saved.hdf5"
    save_bilm_tf_hdf5(bilm.backbone, out)
    names = []
    with h5py.File(converted["weight_file"], "r") as fin:
        fin.visititems(lambda name, obj: names.append(name)
                       if isinstance(obj, h5py.Dataset) else None)
        with h5py.File(out, "r") as fout:
            assert fout["word_embed"].shape == (78, 8)
            assert fout["char_embed"].shape == (106, 6)
            assert fout["CNN_proj/W_proj"].shape == (8 + 60, P)
            for name in names:
                np.testing.assert_array_equal(fout[name][...],
                                              fin[name][...], err_msg=name)


def test_dump_token_embeddings(converted, reference, tmp_path):
    """Layer 0 of upstream's output is [e ; e], e the token embedding."""
    sentence = reference["sentences"][13]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["<S>", "</S>", *sentence]) + "\n", "utf-8")
    out = tmp_path / "tokens.hdf5"
    dump_token_embeddings(str(vocab), converted["options_file"],
                          converted["weight_file"], str(out))
    with h5py.File(out, "r") as f:
        table = f["embedding"][...]
    np.testing.assert_allclose(table[2:], reference["all"][13][0, :, :P],
                               rtol=0, atol=ATOL)


@pytest.mark.slow  # quick tier: test_embed_sentences_all (the same bulk
# path, in Python) and tests/cli/test_cli.py (the command's file to HDF5)
def test_embed_command(converted, reference, tmp_path, capsys):
    """``bilm-keras embed`` with no flag beyond bilm-tf models' (the file
    splits on whitespace: sentences with a space inside a token are left
    out; the Python API covers them)."""
    kept = [i for i, s in enumerate(reference["sentences"])
            if not any(c.isspace() for token in s for c in token)]
    assert len(kept) == 13  # all but "New York" (4) and U+3000 (11)
    dataset = tmp_path / "sentences.txt"
    dataset.write_text("\n".join(" ".join(reference["sentences"][i])
                                 for i in kept) + "\n", "utf-8")
    out = tmp_path / "elmo.hdf5"
    assert cli.run(["embed", "--options_file", converted["options_file"],
                    "--weight_file", converted["weight_file"],
                    "--dataset_file", str(dataset),
                    "--outfile", str(out)]) == len(kept)
    assert f"wrote {len(kept)} sentences" in capsys.readouterr().out
    with h5py.File(out, "r") as f:
        _assert_close([f[str(line)][...] for line in range(len(kept))],
                      [reference["all"][i] for i in kept], "embed")


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_model_without_word_part(converted, reference, tmp_path):
    """word_embedding_dim 0 (upstream's word_dim 0): the char ids alone,
    the projection over the char part; checked against the independent
    numpy biLM on the same weights."""
    import shutil

    import numpy_reference as nr

    folder = pathlib.Path(converted["outdir"])
    model = tmp_path / "chars-only"
    model.mkdir()
    shutil.copyfile(folder / "char.dic", model / "char.dic")
    options = json.loads((folder / "options.json").read_text())
    options["elmoformanylangs"] = {"char_dic": "char.dic", "word_dic": None,
                                   "word_embedding_dim": 0, "n_words": 0}
    (model / "options.json").write_text(json.dumps(options))
    with h5py.File(folder / "lm_weights.hdf5", "r") as fin, \
            h5py.File(model / "lm_weights.hdf5", "w") as fout:
        for name in nr.load_hdf5_weights(folder / "lm_weights.hdf5"):
            if name == "word_embed":
                continue
            value = fin[name][...]
            if name == "CNN_proj/W_proj":
                value = value[8:]  # the char rows: (F, P)
            fout.create_dataset(name, data=value)
    bilm = BidirectionalLanguageModel(model / "options.json",
                                      model / "lm_weights.hdf5")
    sentences = [reference["sentences"][i] for i in (0, 1, 7, 13)]
    got = bilm.embed_sentences(sentences, batch_size=2)
    ids = bilm.make_batcher().batch_sentences(sentences)  # (4, T + 2, MC)
    assert ids.shape[2] == 20
    result = nr.bilm_forward(nr.load_hdf5_weights(model / "lm_weights.hdf5"),
                             options, char_ids=ids)
    layers, lengths = nr.remove_bos_eos(result["layers"], result["lengths"])
    _assert_close(got, [layers[i, :, :n] for i, n in enumerate(lengths)],
                  "no word part")
    assert bilm.backbone.token_embedder.use_projection


def test_always_project_and_word_part_in_config_and_table():
    """Upstream projects even when the filters add up to projection_dim;
    the backbone's config keeps the variant, the table names its rows."""
    from bilm_keras.models.bilm_backbone import BiLMBackbone
    from bilm_keras.weights.bilm_tf_hdf5 import hdf5_shape, weight_table

    kwargs = dict(lstm_dim=8, projection_dim=12, n_layers=1,
                  filters=[[1, 4], [2, 8]], char_embedding_dim=3,
                  n_characters=30, max_characters_per_token=9)
    plain = BiLMBackbone(**kwargs)
    assert not plain.token_embedder.use_projection
    assert plain.ids_width == 9
    for extra, width, rows in [
        (dict(always_project=True), 9, {"CNN_proj/W_proj": (12, 12)}),
        (dict(word_embedding_dim=5, n_words=7), 10,
         {"CNN_proj/W_proj": (5 + 12, 12), "word_embed": (7, 5)}),
    ]:
        backbone = BiLMBackbone(**kwargs, **extra)
        assert backbone.ids_width == width
        again = BiLMBackbone.from_config(backbone.get_config())
        assert again.get_config() == backbone.get_config()
        shapes = {row.hdf5_path: hdf5_shape(row)
                  for row in weight_table(backbone)}
        assert shapes["char_embed"] == (29, 3)
        for name, shape in rows.items():
            assert shapes[name] == shape
        # the mask reads the char columns only: a word id alone is padding
        ids = np.zeros((1, 3, width), np.int64)
        ids[0, 0] = 1
        ids[0, 1, -1] = 4
        mask = backbone.input_mask(ids).numpy()
        assert mask.tolist() == [[True, width == 9, False]]
