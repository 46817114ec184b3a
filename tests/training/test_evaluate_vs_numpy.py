"""``evaluate`` (``run_test.py``) against an independent computation.

A model is trained for a few steps with dropout, dumped to bilm-tf's HDF5,
and each direction's heldout loss is recomputed in numpy
(``numpy_reference``: char-CNN, highway, projected LSTMs with clips and
skip connections) from the dumped weights and the checkpoint's softmax,
over the stream the test data makes: every sentence in file order, each
from zero states as ELMo embeds it, also for a model trained with states
carried from one sentence to the next (bilm-tf's), ``<S> w1 .. wn`` predicting
``w1 .. wn </S>`` forward and ``</S> wn .. w1`` predicting ``wn .. w1 <S>``
backward, with the full softmax. A backward LM evaluated on anything else
than what it was trained to predict (a reversal or alignment slip) gives
other numbers here.
"""

import json
import math

import numpy as np
import pytest
import tensorflow as tf

import numpy_reference as ref
from bilm_keras.training import TrainingRun, evaluate, train
from bilm_keras.save_dirs import dump_weights
from helpers import assert_plain_test_figures, fixture_options

HELDOUT = [
    "the number of unique words increases .",
    # an out-of-vocabulary word (<UNK> target, spelled-out char input)
    "language models use zebras and embeddings of words",
    "neural networks .",
]


def _softmax(save_dir):
    reader = tf.train.load_checkpoint(str(save_dir))
    return [reader.get_tensor(
        f"weights/language_model:softmax:{name}/.ATTRIBUTES/VARIABLE_VALUE"
    ).astype(np.float64) for name in ("W", "b")]


def _numpy_perplexity(weights, options, softmax, vocab, direction):
    """Perplexity of one direction over the heldout, each sentence from
    zero states."""
    index = {w: i for i, w in enumerate(vocab)}
    segments = []  # (inputs, targets) run from zero states
    for line in HELDOUT:
        words = line.split()
        if direction == 1:
            tokens = ["</S>"] + words[::-1] + ["<S>"]
        else:
            tokens = ["<S>"] + words + ["</S>"]
        targets = [index.get(w, index["<UNK>"]) for w in tokens[1:]]
        segments.append((tokens[:-1], targets))
    nll = np.concatenate([
        _numpy_losses(weights, options, softmax, direction, *segment)
        for segment in segments])
    return math.exp(nll.mean())


def _numpy_losses(weights, options, softmax, direction, inputs, targets):
    """Per-token losses of one direction over ``inputs`` from zero
    states."""
    max_characters_per_token = options["char_cnn"]["max_characters_per_token"]
    char_ids = np.stack([ref.word_char_ids(w, max_characters_per_token) + 1
                         for w in inputs])[None]  # (1, N, C)
    x = ref.char_cnn_embeddings(weights, options, char_ids)  # (1, N, P)
    lstm = options["lstm"]
    lengths = np.array([len(inputs)])
    for layer in range(lstm["n_layers"]):
        prefix = ref.lstm_prefix(direction, layer)
        h, _ = ref.run_lstm_layer(
            x, lengths, weights[f"{prefix}/W_0"].astype(np.float64),
            weights[f"{prefix}/B"].astype(np.float64),
            weights[f"{prefix}/W_P_0"].astype(np.float64),
            lstm.get("cell_clip"), lstm.get("proj_clip"),
            np.zeros((1, lstm["dim"])), np.zeros((1, lstm["projection_dim"])),
        )  # (1, N, P)
        if lstm.get("use_skip_connections") and layer > 0:
            h = h + x
        x = h
    W, b = softmax
    logits = x[0] @ W.T + b  # (N, V)
    shift = logits.max(axis=1, keepdims=True)
    log_z = np.log(np.exp(logits - shift).sum(axis=1)) + shift[:, 0]
    return log_z - logits[np.arange(len(targets)), targets]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
@pytest.mark.parametrize("skip,reset", [
    (True, True),  # the defaults
    (False, True),
    (True, False),
])
def test_evaluate_equals_numpy_on_dumped_weights(train_dir, tmp_path, skip,
                                                 reset, request):
    if skip and reset:
        # the defaults: conftest's short run (one epoch, these options)
        save_dir = request.getfixturevalue("short_char_run")[0]
    else:
        lstm = {"dim": 16, "projection_dim": 8, "n_layers": 2,
                "use_skip_connections": skip, "cell_clip": 3,
                "proj_clip": 3}
        options = fixture_options(use_chars=True, dropout=0.1, lstm=lstm,
                                  n_epochs=4,
                                  reset_states_at_sentence_start=reset)
        save_dir = tmp_path / "checkpoints"
        train(options, TrainingRun(
            train_prefix=str(train_dir / "data.txt"),
            vocab_file=str(train_dir / "vocab.txt"), save_dir=str(save_dir),
            seed=3, log_every=1000))
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("\n".join(HELDOUT) + "\n", encoding="utf-8")
    dumped = dump_weights(str(save_dir), str(tmp_path / "lm_weights.hdf5"))
    weights = ref.load_hdf5_weights(dumped["weight_file"])
    with open(dumped["options_file"]) as f:
        dumped_options = json.load(f)
    vocab = (train_dir / "vocab.txt").read_text().split()
    softmax = _softmax(save_dir)
    expected = {
        name: _numpy_perplexity(weights, dumped_options, softmax, vocab, k)
        for k, name in enumerate(("forward", "backward"))
    }
    # the two directions are different models with different numbers
    assert expected["forward"] != pytest.approx(expected["backward"],
                                                rel=1e-3)
    # a model trained with states carried is tested from zero states too
    assert_plain_test_figures(
        save_dir, train_dir / "vocab.txt", heldout, perplexities=expected,
        n_tokens=sum(len(s.split()) + 1 for s in HELDOUT))


@pytest.mark.slow
def test_evaluate_warns_about_a_direction_above_the_unigram_bar(
        train_dir, short_char_run, capsys):
    # conftest's short run (one epoch of both directions), only read here
    save_dir = short_char_run[0]
    recorded = json.loads((save_dir / "training_data.json").read_text())
    assert recorded["n_tokens"] == 134
    assert recorded["unigram_perplexity"] > 1.0

    def run(**kwargs):
        return evaluate(save_dir=str(save_dir),
                        vocab_file=str(train_dir / "vocab.txt"),
                        test_prefix=str(train_dir / "data.txt"),
                        batch_size=2, **kwargs)

    got = run()  # the bar recorded at training time
    assert got["unigram_perplexity"] == recorded["unigram_perplexity"]
    low_bar = min(got["forward_perplexity"], got["backward_perplexity"]) / 2
    got = run(unigram_perplexity=low_bar)
    assert [w.split()[1] for w in got["warnings"]] == ["forward",
                                                       "backward"]
    printed = capsys.readouterr().out
    assert "WARNING: backward heldout perplexity" in printed
    assert "above the unigram perplexity of the training data" in printed
    high_bar = max(got["forward_perplexity"], got["backward_perplexity"]) * 2
    assert run(unigram_perplexity=high_bar)["warnings"] == []
