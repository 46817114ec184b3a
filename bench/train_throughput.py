"""Training throughput (tokens/s) of the mid-size biLM on this machine.

Configuration: bidirectional char-CNN (filters [[1,32],[2,32],[3,64],
[4,128],[5,256]], 2 highway), 2 LSTM layers of 1024 cells projected to
128 with skip connections, batch 32, unroll 20, 1024 sampled negatives,
vocabulary 4,000, random weights, a deterministic synthetic Zipfian corpus
(seed 0). Tokens/s counts batch * unroll_steps words per step (each one
predicted in both directions). Prints one JSON line.

Usage::

    python bench/train_throughput.py [--passes 3] [--steps 10] [--quick]
"""

import argparse
import json
import os
import resource
import statistics
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bilm_keras.data.lm_dataset import make_tf_dataset  # noqa: E402
from bilm_keras.options import BiLMOptions  # noqa: E402
from bilm_keras.training.loop import (  # noqa: E402
    build_model,
    load_vocab,
    make_dataset,
    make_train_step,
)


def config(quick: bool) -> dict:
    if quick:
        return dict(filters=[[1, 8], [2, 8], [3, 16]], dim=64, proj=16,
                    batch=4, unroll=5, negatives=32, vocab=200)
    return dict(filters=[[1, 32], [2, 32], [3, 64], [4, 128], [5, 256]],
                dim=1024, proj=128, batch=32, unroll=20, negatives=1024,
                vocab=4000)


def write_corpus(folder: str, n_vocab: int, n_sentences: int, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(n_vocab - 3)]
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, for CI (no claim about speed)")
    args = parser.parse_args(argv)
    c = config(args.quick)
    options = BiLMOptions.from_dict({
        "lstm": {"dim": c["dim"], "projection_dim": c["proj"], "n_layers": 2,
                 "cell_clip": 3, "proj_clip": 3,
                 "use_skip_connections": True},
        "char_cnn": {"filters": c["filters"], "embedding": {"dim": 16},
                     "n_highway": 2, "n_characters": 261,
                     "max_characters_per_token": 50, "activation": "relu"},
        "bidirectional": True, "dropout": 0.1, "n_tokens_vocab": c["vocab"],
        "n_negative_samples_batch": c["negatives"],
        "batch_size": c["batch"], "unroll_steps": c["unroll"],
    }, source="bench")
    with tempfile.TemporaryDirectory() as folder:
        vocab_file, corpus = write_corpus(folder, c["vocab"], 3000)
        vocab = load_vocab(vocab_file, options)
        tf.keras.utils.set_random_seed(0)
        strategy = tf.distribute.get_strategy()
        lm, optimizer = build_model(options, seed=0)
        step = make_train_step(lm, optimizer, strategy, options)
        data = make_dataset(corpus, vocab, options, seed=0)
        batches = iter(make_tf_dataset(data, c["batch"], c["unroll"]))
        states = lm.zero_states(c["batch"])
        for _ in range(args.warmup):  # trace + first runs
            loss, _, states = step(next(batches), states)
        float(loss)
        rates = []
        for _ in range(args.passes):
            start = time.perf_counter()
            for _ in range(args.steps):
                loss, _, states = step(next(batches), states)
            float(loss)  # wait for the last step
            elapsed = time.perf_counter() - start
            rates.append(args.steps * c["batch"] * c["unroll"] / elapsed)
    print(json.dumps({
        "benchmark": "train_throughput",
        "quick": args.quick,
        "config": c,
        "tokens_per_second": round(statistics.median(rates), 1),
        "passes": [round(r, 1) for r in rates],
        "final_loss": round(float(loss), 4),
        "peak_rss_mb": round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "device": "GPU" if tf.config.list_physical_devices("GPU") else "CPU",
    }))


if __name__ == "__main__":
    main()
