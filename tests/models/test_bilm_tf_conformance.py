"""BidirectionalLanguageModel against bilm-tf's own reference embeddings.

This is bilm-tf's ``test_model.py`` on our implementation: 10 stateful
batches of 3 sentences must match ``lm_embeddings_{0,1,2}.hdf5`` to 1e-6,
for character input and for token input through ``dump_token_embeddings``.
"""

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import (
    Batcher,
    BidirectionalLanguageModel,
    TokenBatcher,
    dump_token_embeddings,
)
from helpers import load_reference_embeddings

ATOL = 1e-6


@pytest.fixture(scope="module")
def reference(model_dir):
    return load_reference_embeddings(model_dir)


def _token_vocab(sentences, path):
    words = sorted({w for lst in sentences for s in lst for w in s})
    path.write_text("\n".join(["<S>", "</S>", "<UNK>"] + words) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def token_model_files(model_dir, reference, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("token_input")
    vocab = _token_vocab(reference[0], tmp / "vocab.txt")
    emb = str(tmp / "embeddings.hdf5")
    dump_token_embeddings(vocab, str(model_dir / "options.json"),
                          str(model_dir / "lm_weights.hdf5"), emb)
    return vocab, emb


def _make(model_dir, token_files, stateful, max_batch_size=4):
    options = str(model_dir / "options.json")
    weights = str(model_dir / "lm_weights.hdf5")
    if token_files is None:
        model = BidirectionalLanguageModel(
            options, weights, stateful=stateful,
            max_batch_size=max_batch_size)
        batcher = Batcher(str(model_dir / "vocab_test.txt"), 50)
    else:
        vocab, emb = token_files
        model = BidirectionalLanguageModel(
            options, weights, use_character_inputs=False,
            embedding_weight_file=emb, stateful=stateful,
            max_batch_size=max_batch_size)
        batcher = TokenBatcher(vocab)
    return model, batcher


@pytest.fixture(scope="module")
def stateless_char_model(model_dir, fixture_bilm):
    """``(model, batcher)``: the session's stateless character-input
    model, for the tests that need no state of their own."""
    return fixture_bilm, Batcher(str(model_dir / "vocab_test.txt"), 50)


@pytest.fixture(params=["characters", "tokens"])
def token_files(request):
    """None for character input, else the token-input files."""
    if request.param == "characters":
        return None
    return request.getfixturevalue("token_model_files")


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_stateful_batches_match_bilm_tf(model_dir, reference, token_files):
    sentences, expected = reference
    model, batcher = _make(model_dir, token_files, stateful=True)
    for i in range(10):
        batch = [sentences[k][i] for k in range(3)]
        out = model(batcher.batch_sentences(batch))
        lengths = out["lengths"].numpy()
        assert list(lengths) == [len(s) for s in batch]
        lm = out["lm_embeddings"].numpy()
        assert lm.shape[:2] == (3, 3) and lm.shape[3] == 32
        for k in range(3):
            np.testing.assert_allclose(
                lm[k, 2, : lengths[k]], expected[k][i], atol=ATOL,
                err_msg=f"batch {i}, sentence {k}",
            )
            # the mask and the zero padding follow the lengths
            assert out["mask"].numpy()[k].sum() == lengths[k]
            assert not lm[k, :, lengths[k]:].any()

    # All batches had 3 rows: the 4th state row was never touched ...
    third_rows = []
    for direction in ("forward", "backward"):
        for c, h in model.states[direction]:
            for state in (c.numpy(), h.numpy()):
                assert not state[3].any()
                assert np.abs(state[2]).sum() > 0
                third_rows.append(state[2].copy())
    # ... and a batch of 2 leaves row 3 (index 2) as it was.
    shape = (2, 5, 50) if token_files is None else (2, 5)
    model(np.ones(shape, np.int32))
    k = 0
    for direction in ("forward", "backward"):
        for c, h in model.states[direction]:
            for state in (c.numpy(), h.numpy()):
                np.testing.assert_allclose(state[2], third_rows[k], atol=1e-7)
                k += 1
    assert model._call_fn.experimental_get_tracing_count() == 1


def test_first_batch_matches_statelessly(model_dir, reference, token_files,
                                        request):
    sentences, expected = reference
    model, batcher = (
        request.getfixturevalue("stateless_char_model")
        if token_files is None
        else _make(model_dir, token_files, stateful=False))
    batch = [sentences[k][0] for k in range(3)]
    for _ in range(2):  # stateless: the same answer twice
        out = model(batcher.batch_sentences(batch))
        for k in range(3):
            np.testing.assert_allclose(
                out["lm_embeddings"].numpy()[k, 2, : len(batch[k])],
                expected[k][0], atol=ATOL)
    # a later batch does not match without the carried state
    batch1 = [sentences[k][1] for k in range(3)]
    out = model(batcher.batch_sentences(batch1))
    diff = np.abs(out["lm_embeddings"].numpy()[0, 2, : len(batch1[0])]
                  - expected[0][1]).max()
    assert diff > 1e-2


def test_no_retracing_across_batch_shapes(stateless_char_model):
    # (the shared model: one trace over every test that called it)
    model, batcher = stateless_char_model
    for batch in ([["a"]], [["a", "b", "c"], ["d"]],
                  [["x"] * 7, [], ["y", "z"], ["w"]]):
        model(batcher.batch_sentences(batch))
    model(tf.constant(batcher.batch_sentences([["q"]]), tf.int64))
    assert model._call_fn.experimental_get_tracing_count() == 1


def test_token_embeddings_output(stateless_char_model):
    model, batcher = stateless_char_model
    ids = batcher.batch_sentences([["Hello", "world"], ["x"]])
    out = model(ids)
    assert out["token_embeddings"].shape == (2, 4, 16)
    # layer 0 of lm_embeddings is the token embedding, twice
    tok = out["token_embeddings"].numpy()[0, 1:3]
    np.testing.assert_allclose(
        out["lm_embeddings"].numpy()[0, 0], np.concatenate([tok, tok], -1))
