"""Adapting a converted ELMoForManyLangs model: the
fixture's ``tiny.model`` converted as it is, then ``train(init_weights=...)``
on text, ``evaluate``, ``dump_weights``, ``BidirectionalLanguageModel`` and
the SavedModel export of the result."""

import json
import math
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import BidirectionalLanguageModel, cli
from bilm_keras.data.tf_dataset import make_tf_dataset
from bilm_keras.layers.training_recurrence import run_stacks_unrolled
from bilm_keras.options import BiLMOptions
from bilm_keras.training import TrainingRun, evaluate, train
from bilm_keras.save_dirs import load_trained_model
from bilm_keras.data.vocab_for_options import load_vocab
from bilm_keras.training.inputs import make_dataset
from bilm_keras.training.model_setup import build_model
from bilm_keras.save_dirs.options_file import write_options

P = 16  # the fixture's projection_dim
#: fixture sentences of 9 tokens, none with whitespace inside a token
SAME_LENGTH = (3, 5)


@pytest.fixture(scope="module")
def converted(manylangs_converted):
    return manylangs_converted


@pytest.fixture(scope="module")
def fixture_data(manylangs_reference):
    r = manylangs_reference
    return r["sentences"], r["all"], r["ids"]


@pytest.fixture(scope="module")
def corpus(fixture_data, tmp_path_factory):
    """The fixture sentences without whitespace in a token, as a corpus,
    and a vocab.txt of half their words (the rest are <UNK> targets)."""
    sentences = fixture_data[0]
    kept = [s for s in sentences
            if not any(c.isspace() for t in s for c in t)]
    out = tmp_path_factory.mktemp("manylangs_corpus")
    (out / "train.txt").write_text(
        "\n".join(" ".join(s) for s in kept * 4) + "\n", "utf-8")
    words = sorted({t for s in kept for t in s})[::2]
    (out / "vocab.txt").write_text(
        "\n".join(["<S>", "</S>", "<UNK>", *words]) + "\n", "utf-8")
    return dict(train=str(out / "train.txt"), vocab=str(out / "vocab.txt"))


def _padded_ids(ids, rows):
    """Upstream's ids of sentences ``rows``, +1, padded with 0."""
    width = max(len(ids[i]) for i in rows)
    return np.stack([np.pad(ids[i] + 1, [(0, width - len(ids[i])), (0, 0)])
                     for i in rows]).astype(np.int32)


@pytest.mark.slow
def test_loaded_training_model_equals_upstream(converted, corpus,
                                               fixture_data, tmp_path):
    """Right after loading (before any step), the training path (char-CNN
    once per distinct token, both LSTM stacks unrolled together) gives
    upstream's embeddings of the converted model."""
    sentences, layers, ids = fixture_data
    options = BiLMOptions.from_json(converted["options_file"])
    vocab = load_vocab(corpus["vocab"], options)
    options = options.replace(n_tokens_vocab=vocab.size)
    lm, _ = build_model(options, seed=0,
                        init_weights=converted["weight_file"])

    text = tmp_path / "two.txt"
    text.write_text("\n".join(" ".join(sentences[i]) for i in SAME_LENGTH)
                    + "\n", "utf-8")
    n = len(sentences[SAME_LENGTH[0]])
    data = make_dataset(str(text), vocab, options, test=True)
    batch = next(iter(make_tf_dataset(data, 2, n + 1)))
    want_ids = _padded_ids(ids, SAME_LENGTH)  # (2, n + 2, 21)
    np.testing.assert_array_equal(batch["tokens_characters"],
                                  want_ids[:, :-1])
    np.testing.assert_array_equal(batch["tokens_characters_reverse"],
                                  want_ids[:, :0:-1])

    embedded = lm.embed_streams([batch["tokens_characters"],
                                 batch["tokens_characters_reverse"]])
    (forward, _), (backward, _) = run_stacks_unrolled(
        [lm.backbone.stacks[d] for d in lm.directions], embedded,
        training=False)
    want = np.stack([layers[i] for i in SAME_LENGTH])  # (2, 3, n, 32)
    np.testing.assert_allclose(embedded[0].numpy()[:, 1:],
                               want[:, 0, :, :P], atol=1e-5)
    for layer in range(2):
        np.testing.assert_allclose(forward[layer].numpy()[:, 1:],
                                   want[:, layer + 1, :, :P], atol=1e-5)
        # backward, flipped back to text order: w1..wn, then <eos>
        np.testing.assert_allclose(
            backward[layer].numpy()[:, ::-1][:, :-1],
            want[:, layer + 1, :, P:], atol=1e-5)


def test_written_options_name_copies_of_the_dictionaries(converted,
                                                        tmp_path):
    options = BiLMOptions.from_json(converted["options_file"])
    written = write_options(options, tmp_path / "run" / "options.json")
    section = json.loads(
        (tmp_path / "run" / "options.json").read_text())["elmoformanylangs"]
    assert (section["char_dic"], section["word_dic"]) == ("char.dic",
                                                          "word.dic")
    for name in ("char.dic", "word.dic"):
        assert (tmp_path / "run" / name).read_bytes() == (
            pathlib.Path(converted["outdir"]) / name).read_bytes()
    assert written.manylangs.char_dic == str(tmp_path / "run" / "char.dic")
    again = BiLMOptions.from_json(tmp_path / "run" / "options.json")
    assert again == written
    # writing over the folder the dictionaries are in leaves them alone
    write_options(again, tmp_path / "run" / "options.json")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "char.dic", "options.json", "word.dic"]


# adapt, dump and export end to end, each step tested on its own
@pytest.mark.nightly
@pytest.mark.slow
def test_adapt_dump_and_export(converted, corpus, fixture_data, tmp_path):
    """A few steps (softmax warm-up, then everything), then the usual
    tail: evaluate, ``bilm-keras dump-weights`` (options keep the
    elmoformanylangs section, the dictionaries copied beside them), the dumped
    files in BidirectionalLanguageModel, and ``bilm-keras export-hub`` from the
    save_dir."""
    sentences, layers, ids = fixture_data
    save_dir = tmp_path / "adapted"
    options = BiLMOptions.from_json(converted["options_file"]).replace(
        unroll_steps=5)
    result = train(options, TrainingRun(
        train_prefix=corpus["train"], vocab_file=corpus["vocab"],
        save_dir=str(save_dir), batch_size=4, n_epochs=1,
        n_train_tokens=6 * 4 * 5, seed=1, log_every=1000,
        init_weights=converted["weight_file"], freeze_lm_steps=2))
    assert result["step"] == 6
    # the save_dir stands on its own: its options name copies beside them
    saved = json.loads((save_dir / "options.json").read_text())
    assert saved["elmoformanylangs"]["char_dic"] == "char.dic"
    assert (save_dir / "word.dic").is_file()
    heldout = evaluate(save_dir=str(save_dir), vocab_file=corpus["vocab"],
                       test_prefix=corpus["train"], batch_size=2,
                       log_every=10**9)
    assert math.isfinite(heldout["forward_perplexity"])
    assert math.isfinite(heldout["backward_perplexity"])

    dump = tmp_path / "dump"
    out = cli.run(["dump-weights", "--save_dir", str(save_dir),
                   "--outfile", str(dump / "lm_weights.hdf5")])
    written = json.loads((dump / "options.json").read_text())
    assert written["elmoformanylangs"]["char_dic"] == "char.dic"
    assert written["elmoformanylangs"]["word_dic"] == "word.dic"
    assert written["char_cnn"]["n_characters"] == 107
    for name in ("char.dic", "word.dic"):
        assert (dump / name).read_bytes() == (
            pathlib.Path(converted["outdir"]) / name).read_bytes()

    rows = [i for i, s in enumerate(sentences)
            if not any(c.isspace() for t in s for c in t)]
    batch_ids = _padded_ids(ids, rows)
    _, lm, _ = load_trained_model(str(save_dir))
    trained = BidirectionalLanguageModel.from_backbone(lm.backbone)(
        batch_ids)["lm_embeddings"].numpy()
    loaded = BidirectionalLanguageModel(
        out["options_file"], out["weight_file"])(batch_ids)
    np.testing.assert_allclose(loaded["lm_embeddings"].numpy(), trained,
                               atol=1e-5)
    # the converted model's embeddings before adaptation: upstream's
    # (test_loaded_training_model_equals_upstream: the same within 1e-5)
    before = np.concatenate([layers[i].ravel() for i in rows])
    after = np.concatenate([trained[k, :, :len(sentences[i])].ravel()
                            for k, i in enumerate(rows)])
    assert not np.allclose(before, after, atol=1e-4)

    cli.run(["export-hub", "--save_dir", str(save_dir),
             "--outdir", str(tmp_path / "hub")])
    module = tf.saved_model.load(str(tmp_path / "hub"))
    got = module.signatures["default"](
        strings=tf.constant([" ".join(sentences[i]) for i in rows]))
    for i in (1, 2):
        np.testing.assert_allclose(got[f"lstm_outputs{i}"].numpy(),
                                   trained[:, i], atol=1e-5)
