"""Training throughput (tokens/s) of the mid-size biLM on this machine.

Configuration: bidirectional char-CNN (filters [[1,32],[2,32],[3,64],
[4,128],[5,256]], 2 highway), 2 LSTM layers of 1024 cells projected to
128 with skip connections, batch 32, unroll 20, 1024 sampled negatives,
vocabulary 4,000, random weights, a deterministic synthetic Zipfian corpus
(seed 0). Tokens/s counts batch * unroll_steps words per step (each one
predicted in both directions). Prints one JSON line.

Usage::

    python bench/train_throughput.py [--passes 5] [--steps 10] [--quick]
    python bench/train_throughput.py --compare            # vs plain path
    python bench/train_throughput.py --compare no_dedup   # one lever off
    python bench/train_throughput.py --compare dense_gradients --vocab 200000
    python bench/train_throughput.py --compare no_reset   # carried states
    python bench/train_throughput.py --compare no_pipeline     # one lever off
    python bench/train_throughput.py --compare no_fused_gates  # one lever off
    python bench/train_throughput.py --compare window_before   # both off
    TF_ENABLE_ONEDNN_OPTS=0 python bench/train_throughput.py
    python bench/train_throughput.py --intra_threads 0 --inter_threads 0
                                   # TensorFlow's own thread pools
    python bench/train_throughput.py --adapt [--batch 16] [--vocab 20000]
    python bench/train_throughput.py --precision mixed_bfloat16 \
        --compare float32
                                   # mixed precision against float32

The training fast path (``LanguageModel(unroll_windows=True,
dedup_tokens=True)``, the default) is what runs; ``--compare`` runs a
baseline in the same process, passes alternating so that other processes'
load hits both alike, and reports the median of the per-pass ratios.

``--adapt`` measures domain adaptation at the published size
(the preset ``elmo_2x4096_512_2048cnn_2xhighway``: 2 x 2 LSTMs of 4096
cells projected to 512, char-CNN 2048 filters, 8192 sampled negatives,
unroll 20): a child process writes random weights in bilm-tf's HDF5
layout, then this process starts from them as ``train_elmo.py
--init_weights`` does (``build_model(init_weights=...)`` + the unigram
softmax bias) and times the softmax-only warm-up step and the full step,
alternating. ``peak_rss_mb`` is this process's peak (TensorFlow, the model,
Adagrad's accumulators, activations); tokens/s count batch * unroll words
per step.
"""

import argparse
import json
import os
import statistics
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# first: it sets this CPU class's oneDNN choice before TensorFlow reads
# it, as in a user's program (bilm_keras._utils.cpu_settings)
import bilm_keras  # noqa: E402,F401
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import common  # noqa: E402

from bilm_keras._utils.cpu_settings import tensorflow_onednn  # noqa: E402
from bilm_keras.data.corpus import count_corpus  # noqa: E402
from bilm_keras.data.tf_dataset import make_tf_dataset  # noqa: E402
from bilm_keras.options import BiLMOptions  # noqa: E402
from bilm_keras.training.adaptation import (  # noqa: E402
    init_softmax,
    softmax_variables,
)
from bilm_keras.data.vocab_for_options import load_vocab  # noqa: E402
from bilm_keras.training.inputs import make_dataset  # noqa: E402
from bilm_keras.layers.precision import set_precision  # noqa: E402
from bilm_keras.training.model_setup import build_model  # noqa: E402
from bilm_keras.training.threads import (  # noqa: E402
    configure_training_threads,
)
from bilm_keras.training.train_step import make_train_step  # noqa: E402

def config(quick: bool) -> dict:
    if quick:
        return dict(filters=[[1, 8], [2, 8], [3, 16]], dim=64, proj=16,
                    batch=4, unroll=5, negatives=32, vocab=200)
    return dict(filters=[[1, 32], [2, 32], [3, 64], [4, 128], [5, 256]],
                dim=1024, proj=128, batch=32, unroll=20, negatives=1024,
                vocab=4000)


def options_dict(c: dict) -> dict:
    """The benchmark model's options.json (bilm-tf's format) for a
    :func:`config`."""
    return {
        "lstm": {"dim": c["dim"], "projection_dim": c["proj"], "n_layers": 2,
                 "cell_clip": 3, "proj_clip": 3,
                 "use_skip_connections": True},
        "char_cnn": {"filters": c["filters"], "embedding": {"dim": 16},
                     "n_highway": 2, "n_characters": 261,
                     "max_characters_per_token": 50, "activation": "relu"},
        "bidirectional": True, "dropout": 0.1, "n_tokens_vocab": c["vocab"],
        "n_negative_samples_batch": c["negatives"],
        "batch_size": c["batch"], "unroll_steps": c["unroll"],
        "all_clip_norm_val": 10.0,
    }


def write_corpus(folder: str, n_tokens_vocab: int, n_sentences: int, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(n_tokens_vocab - 3)]
    vocab_file = os.path.join(folder, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(["<S>", "</S>", "<UNK>"] + words) + "\n")
    ranks = np.minimum(rng.zipf(1.2, size=n_sentences * 25), len(words)) - 1
    lengths = rng.integers(5, 40, size=n_sentences)
    with open(os.path.join(folder, "train.txt"), "w", encoding="utf-8") as f:
        pos = 0
        for n in lengths:
            f.write(" ".join(words[r] for r in ranks[pos:pos + n]) + "\n")
            pos += n
    return vocab_file, os.path.join(folder, "train.txt")


def flops_per_token(c: dict, max_chars: int = 50, char_dim: int = 16,
                    n_highway: int = 2, n_layers: int = 2) -> dict:
    """Forward FLOPs of one token in one direction, by part (x2 per
    multiply-add); a training step costs about 3x (forward + backward)."""
    n_filters = sum(n for _, n in c["filters"])
    cnn = sum(2 * (max_chars - w + 1) * w * char_dim * n
              for w, n in c["filters"])
    cnn += n_highway * 2 * 2 * n_filters * n_filters
    cnn += 2 * n_filters * c["proj"]
    lstm = n_layers * 2 * (2 * c["proj"] * 4 * c["dim"]
                           + c["dim"] * c["proj"])
    softmax = 2 * (c["negatives"] + 1) * c["proj"]
    return dict(char_cnn=cnn, lstm=lstm, softmax=softmax)


class Runner:
    """One model, its train step, data and states: ``run(n)`` -> seconds."""

    def __init__(self, options, c, corpus, vocab, sparse_gradients=True,
                 precision="float32", **model_kwargs):
        tf.keras.utils.set_random_seed(0)
        self.c = c
        strategy = tf.distribute.get_strategy()
        self.lm, optimizer = build_model(options, seed=0, **model_kwargs)
        set_precision(self.lm, precision)
        self.step = make_train_step(self.lm, optimizer, strategy, options,
                                    sparse_gradients=sparse_gradients)
        data = make_dataset(corpus, vocab, options, seed=0)
        self.batches = iter(make_tf_dataset(data, c["batch"], c["unroll"]))
        self.states = self.lm.zero_states(c["batch"])
        self.n_tokens = 0  # char-CNN inputs seen (both streams)
        self.n_distinct = 0  # distinct ones per batch, summed

    def run(self, n_steps: int) -> float:
        start = time.perf_counter()
        for _ in range(n_steps):
            batch = next(self.batches)
            self.loss, _, self.states, _ = self.step(batch,
                                                     self.states)
        float(self.loss)  # wait for the last step
        elapsed = time.perf_counter() - start
        chars = np.concatenate([
            batch["tokens_characters"].numpy().reshape(-1, 50),
            batch["tokens_characters_reverse"].numpy().reshape(-1, 50)])
        self.n_tokens += len(chars)
        self.n_distinct += len(np.unique(chars, axis=0))
        return elapsed


# ---------------------------------------------------------------- --adapt
def adapt_options(quick: bool, batch: int, vocab: int) -> BiLMOptions:
    """The published model's options (tiny LSTMs and CNN with --quick),
    bilm-tf's training settings, ``batch`` and ``vocab``."""
    options = BiLMOptions.from_json(common.PUBLISHED_OPTIONS_FILE)
    if quick:
        c = config(True)
        options = BiLMOptions.from_dict({
            **options.to_dict(),
            "lstm": {**options.lstm.to_dict(), "dim": c["dim"],
                     "projection_dim": c["proj"]},
            "char_cnn": {**options.char_cnn.to_dict(),
                         "filters": c["filters"]},
            "n_negative_samples_batch": c["negatives"],
        }, source="bench --adapt --quick")
    return options.replace(batch_size=batch, n_tokens_vocab=vocab)


def measure_adapt(args) -> dict:
    batch = args.batch or (4 if args.quick else 16)
    n_tokens_vocab = args.vocab or (200 if args.quick else 20000)
    options = adapt_options(args.quick, batch, n_tokens_vocab)
    with tempfile.TemporaryDirectory() as folder:
        # random weights in bilm-tf's layout, written by a child process
        # so that this process's memory holds only what adaptation needs
        _, weights = common.write_model(
            os.path.join(folder, "published"),
            adapt_options(args.quick, 1, 3).to_dict(), "lm_weights.hdf5")
        hdf5_mb = os.path.getsize(weights) / 2**20
        vocab_file, corpus = write_corpus(folder, n_tokens_vocab, 3000)
        vocab = load_vocab(vocab_file, options)
        tf.keras.utils.set_random_seed(0)
        start = time.perf_counter()
        lm, optimizer = build_model(options, seed=0, init_weights=weights)
        stats, token_counts = count_corpus(corpus)
        init_softmax(lm, "unigram", token_counts=token_counts,
                     n_sentences=stats["n_sentences"], vocab=vocab)
        load_s = time.perf_counter() - start
        strategy = tf.distribute.get_strategy()
        steps = {
            "warmup": make_train_step(lm, optimizer, strategy, options,
                                      variables=softmax_variables(lm)),
            "adapt": make_train_step(lm, optimizer, strategy, options),
        }
        data = make_dataset(corpus, vocab, options, seed=0)
        batches = iter(make_tf_dataset(data, batch, options.unroll_steps))
        states = lm.zero_states(batch)

        def run(name, n_steps):
            nonlocal states
            begin = time.perf_counter()
            for _ in range(n_steps):
                loss, _, states, _ = steps[name](next(batches), states)
            float(loss)  # wait for the last step
            return n_steps * batch * options.unroll_steps / (
                time.perf_counter() - begin)

        for name in steps:  # trace + first runs
            run(name, args.warmup)
        rates = {name: [] for name in steps}
        for _ in range(args.passes):  # alternate: contention hits both
            for name in steps:
                rates[name].append(run(name, args.steps))
    return {
        "benchmark": "train_throughput --adapt",
        "quick": args.quick,
        "model": "test-size" if args.quick else (
            "elmo_2x4096_512_2048cnn_2xhighway (random weights)"),
        "n_parameters_lm": int(sum(np.prod(v.shape)
                                   for v in lm.backbone.trainable_variables)),
        "batch": batch, "unroll": options.unroll_steps, "vocab": n_tokens_vocab,
        "negatives": options.n_negative_samples_batch,
        "tokens_per_second": round(statistics.median(rates["adapt"]), 1),
        "passes": [round(r, 1) for r in rates["adapt"]],
        "warmup_tokens_per_second": round(
            statistics.median(rates["warmup"]), 1),
        "warmup_passes": [round(r, 1) for r in rates["warmup"]],
        "load_s": round(load_s, 2),
        "hdf5_mb": round(hdf5_mb, 1),
        "peak_rss_mb": round(common.peak_rss_mib(), 1),
        "steps_per_pass": args.steps,
        "intra_threads": tf.config.threading
        .get_intra_op_parallelism_threads(),
        "device": "GPU" if tf.config.list_physical_devices("GPU") else "CPU",
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, for CI (no claim about speed)")
    parser.add_argument("--compare", nargs="?", const="plain",
                        choices=["plain", "no_unroll", "no_dedup",
                                 "dense_gradients", "no_reset",
                                 "no_pipeline", "no_fused_gates",
                                 "window_before", "float32"],
                        help="also run a baseline, passes alternating, and "
                        "report the ratio: plain (while loop, no dedup; the "
                        "default), no_unroll, no_dedup, dense_gradients, "
                        "no_pipeline (the window's layers one after the "
                        "other), no_fused_gates (the gate math as plain ops; "
                        "one lever off each), window_before (both of the "
                        "last two off) or no_reset (states carried across "
                        "sentences, bilm-tf's training) or float32 (the "
                        "fast path at float32, against --precision)")
    parser.add_argument("--precision", default="float32",
                        help="the fast path's precision (bilm_keras/layers/"
                        "precision.py), e.g. mixed_bfloat16")
    parser.add_argument("--vocab", type=int, default=None,
                        help="vocabulary size (default 4000; 200 quick)")
    parser.add_argument("--no_unroll", action="store_true",
                        help="LanguageModel(unroll_windows=False)")
    parser.add_argument("--no_dedup", action="store_true",
                        help="LanguageModel(dedup_tokens=False)")
    parser.add_argument("--intra_threads", type=int, default=None,
                        help="threads per op, 0 = TensorFlow's default "
                        "(default: what `bilm-keras train` picks)")
    parser.add_argument("--inter_threads", type=int, default=None,
                        help="ops at a time, the same conventions")
    parser.add_argument("--adapt", action="store_true",
                        help="domain adaptation at the published size: "
                        "--init_weights from random weights in "
                        "bilm-tf's layout, warm-up and full steps")
    parser.add_argument("--batch", type=int, default=None,
                        help="--adapt: batch size (default 16; 4 quick)")
    args = parser.parse_args(argv)
    # the thread pools `bilm-keras train` sizes, unless given
    configure_training_threads(args.intra_threads, args.inter_threads)
    if args.adapt:
        print(json.dumps(measure_adapt(args)))
        return
    c = config(args.quick)
    if args.vocab:
        c["vocab"] = args.vocab
    options = BiLMOptions.from_dict(options_dict(c), source="bench")
    fast_kwargs = dict(unroll_windows=not args.no_unroll,
                       dedup_tokens=not args.no_dedup)
    if args.compare == "float32" and args.precision == "float32":
        parser.error("--compare float32 needs another --precision")
    tokens_per_step = c["batch"] * c["unroll"]
    with tempfile.TemporaryDirectory() as folder:
        vocab_file, corpus = write_corpus(folder, c["vocab"], 3000)
        vocab = load_vocab(vocab_file, options)
        runners = {"fast": Runner(options, c, corpus, vocab,
                                  precision=args.precision, **fast_kwargs)}
        if args.compare:
            baseline = {
                "plain": dict(unroll_windows=False, dedup_tokens=False),
                "no_unroll": dict(unroll_windows=False, dedup_tokens=True),
                "no_dedup": dict(unroll_windows=True, dedup_tokens=False),
                "dense_gradients": dict(unroll_windows=True,
                                        dedup_tokens=True,
                                        sparse_gradients=False),
                "no_reset": dict(unroll_windows=True, dedup_tokens=True,
                                 reset_states_at_sentence_start=False),
                "no_pipeline": dict(window_chunk_steps=None),
                "no_fused_gates": dict(fused_gates=False),
                "window_before": dict(window_chunk_steps=None,
                                      fused_gates=False),
                "float32": fast_kwargs,
            }[args.compare]
            runners["baseline"] = Runner(options, c, corpus, vocab,
                                         **baseline)
        for runner in runners.values():
            runner.run(args.warmup)  # trace + first runs
            runner.n_tokens = runner.n_distinct = 0
        rates = {name: [] for name in runners}
        for _ in range(args.passes):  # alternate: contention hits both
            for name, runner in runners.items():
                seconds = runner.run(args.steps)
                rates[name].append(args.steps * tokens_per_step / seconds)
        n = 512 if args.quick else 2048
        peak = common.matmul_gflops(n, n, n)
    fast = runners["fast"]
    rate = statistics.median(rates["fast"])
    parts = flops_per_token(c)
    # per word: both directions, forward + backward (3x forward); the
    # char-CNN runs on distinct tokens only with dedup
    distinct = fast.n_distinct / fast.n_tokens if fast_kwargs[
        "dedup_tokens"] else 1.0
    dense_flops = 2 * 3 * sum(parts.values())
    computed_flops = dense_flops - 2 * 3 * parts["char_cnn"] * (1 - distinct)
    result = {
        "benchmark": "train_throughput",
        "quick": args.quick,
        "config": c,
        "tokens_per_second": round(rate, 1),
        "passes": [round(r, 1) for r in rates["fast"]],
        "final_loss": round(float(fast.loss), 4),
        "trainable_parameters": int(sum(
            np.prod(v.shape) for v in fast.lm.trainable_variables)),
        "peak_rss_mb": round(common.peak_rss_mib(), 1),
        "settings": dict(
            **fast_kwargs,
            precision=args.precision,
            TF_ENABLE_ONEDNN_OPTS=os.environ.get("TF_ENABLE_ONEDNN_OPTS",
                                                 "default"),
            onednn=tensorflow_onednn(),
            intra_threads=tf.config.threading
            .get_intra_op_parallelism_threads(),
            inter_threads=tf.config.threading
            .get_inter_op_parallelism_threads(),
            steps_per_pass=args.steps,
        ),
        "distinct_token_fraction": round(distinct, 3),
        "gflop_per_token": round(computed_flops / 1e9, 4),
        "gflop_per_token_without_dedup": round(dense_flops / 1e9, 4),
        "achieved_gflops": round(rate * computed_flops / 1e9, 1),
        "matmul_peak_gflops": round(peak, 1),
        "peak_fraction": round(rate * computed_flops / 1e9 / peak, 3),
        "device": "GPU" if tf.config.list_physical_devices("GPU") else "CPU",
    }
    if args.compare:
        result["baseline"] = args.compare
        result["baseline_tokens_per_second"] = round(
            statistics.median(rates["baseline"]), 1)
        result["baseline_passes"] = [round(r, 1) for r in rates["baseline"]]
        result["speedup_median_of_pass_ratios"] = round(
            common.median_ratio(rates["fast"], rates["baseline"]), 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
