"""bilm-tf's ``run_test.py`` perplexity (states carried through the heldout)
against the figures bilm-tf's own ``test()`` recorded for its checkpoint
(``tests/fixtures/bilm_tf_run``) and against numpy; plain ``test`` on that
checkpoint against numpy from zero states."""

import json
import math
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import numpy_reference as ref
from bilm_keras.data.bilm_tf_heldout import iter_bilm_tf_heldout_batches
from bilm_keras.training import stateful_evaluation
from bilm_keras.save_dirs import dump_weights, load_trained_model
from bilm_keras.save_dirs.bilm_tf_run import load_bilm_tf_language_model
from bilm_keras.data.vocab_for_options import load_vocab
from bilm_keras.weights.model_detection import locate_checkpoint
from bilm_keras.training.stateful_evaluation import (
    evaluate_stateful,
    stateful_perplexity,
)
from helpers import assert_plain_test_figures

RUN = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "bilm_tf_run"
RECORDED = json.loads((RUN / "perplexities.json").read_text())["by_batch_size"]


@pytest.mark.parametrize("sub,batch_size", [
    # one in the quick tier (a model and its trace are ~2 s); the two
    # generations give equal models (tests/weights/test_bilm_tf_checkpoint)
    # and numpy gives batch size 1's figure (below)
    ("save_dir_tf12", "4"),
    pytest.param("save_dir", "1", marks=pytest.mark.slow),
    pytest.param("save_dir", "4", marks=pytest.mark.slow),
    pytest.param("save_dir_tf12", "1", marks=pytest.mark.slow),
])
def test_reproduces_bilm_tfs_run_test(sub, batch_size, monkeypatch):
    assert sorted(RECORDED) == ["1", "4"]
    traced, make = [], stateful_evaluation.graph_function

    def graph_function(func):
        traced.append(make(func))
        return traced[-1]

    monkeypatch.setattr(stateful_evaluation, "graph_function", graph_function,
                        raising=True)
    got = evaluate_stateful(save_dir=RUN / sub, vocab_file=RUN / "vocab.txt",
                            test_prefix=str(RUN / "heldout.txt"),
                            batch_size=int(batch_size))
    recorded = RECORDED[batch_size]
    assert got.n_batches == recorded["n_batches"]
    # one trace: at 4 rows, for the window of 20 batches and the last of 2
    assert [f.experimental_get_tracing_count() for f in traced] == [1]
    assert got.perplexity == pytest.approx(recorded["perplexity"], rel=1e-4)
    # the figure is the directions' mean loss
    assert got.perplexity == pytest.approx(math.exp(np.mean(
        [math.log(p) for p in got.direction_perplexities.values()])))


def _numpy_stateful_perplexity(weights, options, softmax, lines, vocab):
    """Batch size 1 in numpy: each direction reads every line in turn, its
    states carried, and scores every prediction with the full softmax."""
    losses = _numpy_losses(weights, options, softmax, lines, vocab,
                           carried=True)
    return (math.exp(np.mean([v.mean() for v in losses.values()])),
            len(losses["forward"]))


def _numpy_losses(weights, options, softmax, lines, vocab, *, carried):
    """``{direction: (n,) losses}`` of every prediction, with the full
    softmax: the lines read in turn, the states ``carried`` from one to
    the next, or each line from zero states (blank lines skipped, as
    ``test`` skips them)."""
    index = {w: i for i, w in enumerate(vocab)}
    lstm = options["lstm"]
    max_chars = options["char_cnn"]["max_characters_per_token"]
    W, b = (np.asarray(x, np.float64) for x in softmax)
    segments = [lines] if carried else [[line] for line in lines
                                        if line.split()]
    losses = {}
    for direction, name in enumerate(("forward", "backward")):
        losses[name] = []
        for segment in segments:
            inputs, targets = [], []
            for line in segment:
                words = line.split()
                tokens = (["</S>"] + words[::-1] + ["<S>"] if direction
                          else ["<S>"] + words + ["</S>"])
                inputs += tokens[:-1]
                targets += [index.get(w, index["<UNK>"])
                            for w in tokens[1:]]
            char_ids = np.stack([ref.word_char_ids(w, max_chars) + 1
                                 for w in inputs])[None]  # (1, N, C)
            x = ref.char_cnn_embeddings(weights, options,
                                        char_ids)  # (1, N, P)
            for layer in range(lstm["n_layers"]):
                p = ref.lstm_prefix(direction, layer)
                h, _ = ref.run_lstm_layer(
                    x, np.array([len(inputs)]), weights[f"{p}/W_0"],
                    weights[f"{p}/B"], weights[f"{p}/W_P_0"],
                    lstm["cell_clip"], lstm["proj_clip"],
                    np.zeros((1, lstm["dim"])),
                    np.zeros((1, lstm["projection_dim"])))  # (1, N, P)
                x = h + x if lstm["use_skip_connections"] and layer else h
            logits = x[0] @ W.T + b  # (N, V)
            shift = logits.max(axis=1)
            log_z = np.log(np.exp(logits - shift[:, None]).sum(axis=1)) \
                + shift
            losses[name].append(
                log_z - logits[np.arange(len(targets)), targets])
        losses[name] = np.concatenate(losses[name])
    return losses


def test_bilm_tfs_figure_in_numpy():
    # bilm-tf's dump, its checkpoint's softmax, its heldout: numpy gives
    # the figure bilm-tf's test() recorded
    reader = tf.train.load_checkpoint(str(RUN / "save_dir" / "model.ckpt-40"))
    softmax = [reader.get_tensor(f"lm/softmax/{n}") for n in ("W", "b")]
    expected, n_tokens = _numpy_stateful_perplexity(
        {k: v.astype(np.float64) for k, v in
         ref.load_hdf5_weights(RUN / "lm_weights.hdf5").items()},
        json.loads((RUN / "save_dir" / "options.json").read_text()),
        softmax, (RUN / "heldout.txt").read_text("utf-8").splitlines(),
        (RUN / "vocab.txt").read_text().split())
    assert n_tokens == RECORDED["1"]["n_batches"]
    assert expected == pytest.approx(RECORDED["1"]["perplexity"], rel=1e-5)


@pytest.mark.slow  # three traces of the model
def test_plain_test_is_each_sentence_from_zero_states():
    # without --stateful: each sentence from zero states, as numpy gives
    # it from bilm-tf's dump and softmax, whatever the batch size
    reader = tf.train.load_checkpoint(str(RUN / "save_dir" / "model.ckpt-40"))
    losses = _numpy_losses(
        ref.load_hdf5_weights(RUN / "lm_weights.hdf5"),
        json.loads((RUN / "save_dir" / "options.json").read_text()),
        [reader.get_tensor(f"lm/softmax/{n}") for n in ("W", "b")],
        (RUN / "heldout.txt").read_text("utf-8").splitlines(),
        (RUN / "vocab.txt").read_text().split(), carried=False)
    assert len(losses["forward"]) == 159
    assert_plain_test_figures(
        RUN / "save_dir", RUN / "vocab.txt", RUN / "heldout.txt",
        n_tokens=159, perplexities={d: math.exp(loss.mean())
                                    for d, loss in losses.items()})


@pytest.fixture(scope="module")
def bilm_tf_model():
    options, lm, _ = load_bilm_tf_language_model(
        RUN / "save_dir", locate_checkpoint(RUN / "save_dir"))
    return options, lm, load_vocab(str(RUN / "vocab.txt"), options)


def _batches(vocab, batch_size):
    return list(iter_bilm_tf_heldout_batches(str(RUN / "heldout.txt"),
                                             vocab, batch_size))


@pytest.mark.slow
def test_one_batch_per_call_gives_the_same_figure(bilm_tf_model,
                                                  monkeypatch):
    _, lm, vocab = bilm_tf_model
    batches = _batches(vocab, 4)
    windows, make = [], stateful_evaluation.graph_function

    def graph_function(func):  # each call's window, by its steps
        traced = make(func)

        def run(window, states):
            windows.append(next(iter(window.values())).shape[1])
            return traced(window, states)

        run.get_concrete_function = traced.get_concrete_function
        return run

    monkeypatch.setattr(stateful_evaluation, "graph_function",
                        graph_function)
    monkeypatch.setattr(stateful_evaluation, "BATCHES_PER_CALL", 1)
    one = stateful_perplexity(lm, batches, batch_size=4)
    assert windows == [1] * len(batches)
    windows.clear()
    monkeypatch.setattr(stateful_evaluation, "BATCHES_PER_CALL", 7)
    seven = stateful_perplexity(lm, batches, batch_size=4)
    assert windows == [7] * (len(batches) // 7) + [len(batches) % 7] * (
        len(batches) % 7 > 0)
    assert one.n_batches == seven.n_batches == len(batches)
    assert one.perplexity == pytest.approx(seven.perplexity, rel=1e-6)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_the_figure_needs_the_carried_states(bilm_tf_model):
    # every step from zero states (the model resets where a batch says a
    # sentence starts) is another, worse figure
    _, lm, vocab = bilm_tf_model
    assert lm.reset_states_at_sentence_start
    batches = _batches(vocab, 4)
    for batch in batches:
        for suffix in ("", "_reverse"):
            batch["sentence_start" + suffix] = np.ones((4, 1), np.float32)
    reset = stateful_perplexity(lm, batches, batch_size=4)
    assert reset.perplexity > RECORDED["4"]["perplexity"] * 1.05


@pytest.mark.slow
def test_our_save_dir_in_numpy(short_char_run, train_dir, tmp_path):
    save_dir = short_char_run[0]
    lines = ["the number of unique words increases .", "",
             "language models use zebras and embeddings of words"]
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = evaluate_stateful(save_dir=save_dir,
                            vocab_file=train_dir / "vocab.txt",
                            test_prefix=str(heldout), batch_size=1)
    dumped = dump_weights(str(save_dir), str(tmp_path / "lm_weights.hdf5"))
    _, lm, _ = load_trained_model(str(save_dir))
    expected, n_tokens = _numpy_stateful_perplexity(
        {k: v.astype(np.float64) for k, v in
         ref.load_hdf5_weights(dumped["weight_file"]).items()},
        json.loads(pathlib.Path(dumped["options_file"]).read_text()),
        [lm.softmax.W.numpy(), lm.softmax.b.numpy()], lines,
        (train_dir / "vocab.txt").read_text().split())
    assert got.n_tokens == n_tokens
    assert got.perplexity == pytest.approx(expected, rel=1e-5)


def test_no_complete_batch(tmp_path):
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("neural networks .\n")
    with pytest.raises(ValueError, match=r"heldout\.txt: no complete batch "
                                         r"of 8 rows"):
        evaluate_stateful(save_dir=RUN / "save_dir_tf12",
                          vocab_file=RUN / "vocab.txt",
                          test_prefix=str(heldout), batch_size=8)
