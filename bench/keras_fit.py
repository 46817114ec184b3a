"""How fast a Keras model trains on ELMoEmbedding, against the bulk path.

One process, random weights of the published model's shapes
(``--quick``: the tiny model), the benches' corpus. Alternating in each
round:

* ``embed``: ``BidirectionalLanguageModel.embed_sentences`` over the
  corpus, every layer (the forward tokens/s a frozen biLM can give);
* ``fit_mix``: one epoch of ``model.fit`` of a tagger (ELMoEmbedding's
  mix, ``trainable="mix"``, then a Dense softmax per token) over the
  corpus as padded token matrices, ``--batch_size`` sentences a step in
  the corpus' order; tokens/s counts the real tokens.
* ``fit_mix_sorted``: the same epoch with the sentences sorted by
  length first, as ``embed`` batches them.
* ``fit_mix_bucketed``: batches as a user batches by length, ``tf.data``'s
  ``bucket_by_sequence_length`` over shuffled sentences, as they come in
  an epoch over a corpus much larger than a bucket: the first full
  batches drawn from four times the corpus' sentences (same lengths and
  words), as many as the corpus has batches. A bucket's last, partial
  batch is rare in such an epoch, and the bench's corpus is too small to
  show that. tokens/s counts that side's own tokens.
* ``fit_mix_uncached``: ``fit_mix`` with ``token_cache_size=0``, the
  char-CNN run on every batch's tokens, as a first epoch runs it.

Then, once: ``fit_all`` (the same tagger with ``trainable="all"``, the LM
fine-tuned), and the cache: the corpus' layers computed once
(``embed_layers``), then epochs of the mix and head on them
(``cached_layers_dataset``) against an epoch that recomputes them, and
the sizes of a cache of the corpus in each storage option (HDF5 files of
``dump_bilm_embeddings``: every layer, the two LSTM layers, a fixed mix;
float32 and float16).

Prints one JSON line: the machine, each side's medians, the ratios
``fit_mix / embed`` (median of per-round ratios) and ``fit_all /
embed``, the cache's speed-up and sizes.

Usage::

    python bench/keras_fit.py --rounds 3
    python bench/keras_fit.py --quick      # a smoke run, tiny model
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import common


def _tagger(layer, n_tags):
    import keras

    tokens = keras.Input(shape=(None,), dtype="string")
    tags = keras.layers.Dense(n_tags, activation="softmax")(layer(tokens))
    model = keras.Model(tokens, tags)
    model.compile(keras.optimizers.Adam(1e-3),
                  "sparse_categorical_crossentropy")
    return model


def _batches(corpus, tags, batch_size):
    """The corpus as ``(tokens, tags)`` batches, padded per batch."""
    import numpy as np
    import tensorflow as tf

    out = []
    for start in range(0, len(corpus), batch_size):
        rows = corpus[start: start + batch_size]
        width = max(len(s) for s in rows)
        tokens = np.full((len(rows), width), "", dtype=object)
        labels = np.zeros((len(rows), width), "int32")
        for r, sentence in enumerate(rows):
            tokens[r, : len(sentence)] = sentence
            labels[r, : len(sentence)] = tags[start + r]
        out.append((tf.constant(tokens, tf.string), labels))
    return out


def _bucketed_batches(corpus, tags, batch_size, n_batches, seed=0):
    """The first ``n_batches`` full batches of the corpus shuffled, then
    batched by ``tf.data``'s ``bucket_by_sequence_length``: buckets 8
    tokens wide, ``batch_size`` sentences a batch, each padded to its
    longest."""
    import numpy as np
    import tensorflow as tf

    order = np.random.default_rng(seed).permutation(len(corpus))
    dataset = tf.data.Dataset.from_generator(
        lambda: ((corpus[i], tags[i].astype("int32")) for i in order),
        output_signature=(tf.TensorSpec((None,), tf.string),
                          tf.TensorSpec((None,), tf.int32)))
    longest = max(len(s) for s in corpus)
    boundaries = list(range(8, longest + 1, 8))
    dataset = dataset.bucket_by_sequence_length(
        lambda tokens, _: tf.shape(tokens)[0], boundaries,
        [batch_size] * (len(boundaries) + 1))
    batches = list(dataset)
    # a corpus too small for one full batch (--quick) gives what it has
    full = [b for b in batches if b[0].shape[0] == batch_size] or batches
    return [(x, y.numpy()) for x, y in full[:n_batches]]


def _positions_per_token(batches, n_tokens) -> float:
    """Padded positions computed per real token."""
    return round(sum(int(x.shape[0] * x.shape[1]) for x, _ in batches)
                 / n_tokens, 3)


def _epoch_seconds(model, batches) -> float:
    """One epoch of ``train_on_batch`` over ``batches``."""
    start = time.perf_counter()
    for x, y in batches:
        model.train_on_batch(x, y)
    return time.perf_counter() - start


def _cache_sizes(folder, corpus_file, options_file, weight_file,
                 n_tokens, mix_logits) -> dict:
    """Bytes per token of a cache of the corpus, per storage option."""
    from bilm_keras import EmbeddingSpec, dump_bilm_embeddings
    from bilm_keras.embedding.dump_plan import DumpSettings

    options = {
        "every_layer": dict(output="all"),
        "lstm_layers_1_2": dict(output="all", layers=(1, 2)),
        "fixed_mix": dict(output="mix", mix_logits=tuple(mix_logits)),
    }
    sizes = {}
    for name, fields in options.items():
        for dtype in ("float32", "float16"):
            path = os.path.join(folder, f"{name}_{dtype}.hdf5")
            dump_bilm_embeddings(None, corpus_file, options_file,
                                 weight_file, path,
                                 EmbeddingSpec(dtype=dtype, **fields),
                                 DumpSettings(progress=False))
            size = os.path.getsize(path)
            sizes[f"{name}_{dtype}"] = {
                "bytes_per_token": round(size / n_tokens, 1),
                "mib_per_million_tokens": round(size / n_tokens * 1e6
                                                / 2**20, 1)}
            os.remove(path)
    return sizes


def measure(args) -> dict:
    import numpy as np

    from bilm_keras import BidirectionalLanguageModel, ELMoEmbedding
    from bilm_keras.keras_layer.cached_layers import cached_layers_dataset

    workdir = args.workdir or tempfile.mkdtemp(prefix="keras_fit.")
    common.write_bench_model(workdir, args.quick)
    options_file = os.path.join(workdir, "options.json")
    weight_file = os.path.join(workdir, "weights.hdf5")
    corpus = common.make_corpus(n_sentences=args.sentences)
    n_tokens = sum(len(s) for s in corpus)
    rng = np.random.default_rng(0)
    tags = [rng.integers(1, args.n_tags, len(s)) for s in corpus]
    batches = _batches(corpus, tags, args.batch_size)
    # the same epoch with the sentences sorted by length, as
    # tf.data's bucket_by_sequence_length would batch them: embed sorts
    # its batches so, and padded positions cost the layer as real ones
    by_length = sorted(range(len(corpus)), key=lambda i: len(corpus[i]))
    sorted_batches = _batches([corpus[i] for i in by_length],
                              [tags[i] for i in by_length], args.batch_size)

    pool = common.make_corpus(n_sentences=4 * args.sentences)
    bucketed_batches = _bucketed_batches(
        pool, [rng.integers(1, args.n_tags, len(s)) for s in pool],
        args.batch_size, len(batches))
    bucketed_tokens = sum(int(np.sum(x.numpy() != b""))
                          for x, _ in bucketed_batches)

    bilm = BidirectionalLanguageModel(options_file, weight_file)
    layer = ELMoEmbedding.from_pretrained(workdir, name="elmo")
    tagger = _tagger(layer, args.n_tags)
    uncached = _tagger(ELMoEmbedding.from_pretrained(
        workdir, name="elmo", token_cache_size=0), args.n_tags)
    # warm-up: a whole pass each, untimed (the train step's traces for
    # new batch shapes, the embedder's first graphs, the token cache)
    bilm.embed_sentences(corpus)
    for batches_of_side in (batches, sorted_batches, bucketed_batches):
        _epoch_seconds(tagger, batches_of_side)
    _epoch_seconds(uncached, batches)
    sides = {"fit_mix": (tagger, batches),
             "fit_mix_sorted": (tagger, sorted_batches),
             "fit_mix_bucketed": (tagger, bucketed_batches),
             "fit_mix_uncached": (uncached, batches)}

    def run(name):
        if name == "embed":
            start = time.perf_counter()
            bilm.embed_sentences(corpus)
            return time.perf_counter() - start
        return _epoch_seconds(*sides[name])

    runs = common.alternating_rounds(["embed", *sides], args.rounds, run)
    report = {
        "embed_tokens_per_s": round(n_tokens / statistics.median(
            runs["embed"]), 1),
        "fit_mix_tokens_per_s": round(n_tokens / statistics.median(
            runs["fit_mix"]), 1),
        # tokens/s ratio = time ratio inverted, per round
        "fit_mix_over_embed": round(common.median_ratio(
            runs["embed"], runs["fit_mix"]), 3),
        **{f"{name}_over_embed": round(common.median_ratio(
            runs["embed"], runs[name]), 3)
           for name in ("fit_mix_sorted", "fit_mix_uncached")},
        "fit_mix_bucketed_tokens_per_s": round(
            bucketed_tokens / statistics.median(runs["fit_mix_bucketed"]),
            1),
        # its own tokens: tokens/s over embed's, per round
        "fit_mix_bucketed_over_embed": round(common.median_ratio(
            runs["embed"], [t * n_tokens / bucketed_tokens
                            for t in runs["fit_mix_bucketed"]]), 3),
        # positions computed per real token: corpus order, sorted, bucketed
        "padding": [_positions_per_token(batches, n_tokens),
                    _positions_per_token(sorted_batches, n_tokens),
                    _positions_per_token(bucketed_batches, bucketed_tokens)],
        "rounds": {k: [round(t, 3) for t in v] for k, v in runs.items()},
    }

    # the cache: layers once, then the mix and head from them
    start = time.perf_counter()
    cached = layer.embed_layers(corpus, batch_size=args.batch_size)
    report["cache_compute_s"] = round(time.perf_counter() - start, 3)
    cached_model = _tagger_on_cache(layer, args.n_tags,
                                    int(cached[0].shape[0]),
                                    int(cached[0].shape[-1]))
    cached_batches = list(cached_layers_dataset(
        cached, [t.astype("float32") for t in tags],
        batch_size=args.batch_size))
    _epoch_seconds(cached_model, cached_batches)
    cache_epochs = [_epoch_seconds(cached_model, cached_batches)
                    for _ in range(max(args.rounds, 2))]
    report["cached_epoch_s"] = round(statistics.median(cache_epochs), 4)
    report["recomputed_epoch_s"] = round(statistics.median(
        runs["fit_mix"]), 3)
    report["cache_speedup"] = round(
        report["recomputed_epoch_s"] / report["cached_epoch_s"], 1)
    with tempfile.TemporaryDirectory(prefix="keras_fit_cache.") as tmp:
        corpus_file = os.path.join(tmp, "corpus.txt")
        with open(corpus_file, "w", encoding="utf-8") as f:
            f.writelines(" ".join(s) + "\n" for s in corpus)
        report["cache_sizes"] = _cache_sizes(
            tmp, corpus_file, options_file, weight_file, n_tokens,
            layer.scalar_mix.scalar_weights.numpy())
    cached = cached_batches = cached_model = None

    # fine-tuning the LM: once, after the rest (its optimizer holds three
    # copies of the weights)
    tuned = _tagger(ELMoEmbedding.from_pretrained(
        workdir, trainable="all", name="elmo"), args.n_tags)
    _epoch_seconds(tuned, batches[:4])
    fit_all = [_epoch_seconds(tuned, batches)
               for _ in range(args.all_rounds)]
    report["fit_all_tokens_per_s"] = round(
        n_tokens / statistics.median(fit_all), 1)
    report["fit_all_over_embed"] = round(
        statistics.median(runs["embed"]) / statistics.median(fit_all), 3)
    return report


def _tagger_on_cache(layer, n_tags, n_layers, dim):
    import keras

    cached = keras.Input(shape=(n_layers, None, dim))
    tags = keras.layers.Dense(n_tags, activation="softmax")(layer(cached))
    model = keras.Model(cached, tags)
    model.compile(keras.optimizers.Adam(1e-3),
                  "sparse_categorical_crossentropy")
    return model


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="the tiny model, a smoke run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--all_rounds", type=int, default=1,
                        help="epochs timed with trainable='all'")
    parser.add_argument("--sentences", type=int, default=None,
                        help="corpus sentences (default 256; --quick 16)")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--n_tags", type=int, default=8)
    parser.add_argument("--workdir", default=None,
                        help="reuse/keep options.json + weights.hdf5 here")
    args = parser.parse_args(argv)
    if args.sentences is None:
        args.sentences = 16 if args.quick else 256
    if args.quick:
        args.rounds = min(args.rounds, 1)
    report = {"machine": common.machine(),
              "model": "tiny" if args.quick else "published shapes "
              "(elmo_2x4096_512_2048cnn_2xhighway), random weights",
              "sentences": args.sentences, "batch_size": args.batch_size,
              **measure(args)}
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    main(sys.argv[1:])
