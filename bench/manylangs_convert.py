"""Converting an ELMoForManyLangs model, and embedding with the result.

Writes a released-size ELMoForManyLangs model directory (upstream's
``cnn_50_100_512_4096_sample.json``: char-CNN 2048 filters over 50-dim
chars, 100-dim words, 2 highway, 2 x 2 LSTMs of 4096 cells projected to
512; random weights; a char.dic of ``--n_chars`` characters and a word.dic
of ``--n_words`` words; both .pkl files in torch's legacy serialization, as
torch 0.4 wrote them), then:

* times ``convert_manylangs`` (seconds; peak RSS of the converting process,
  which imports neither torch nor TensorFlow; ``manylangs_pkl_reader.py``
  compares it with torch.load);
* times ``BidirectionalLanguageModel.embed_sentences`` with the converted
  model against a bilm-tf model of the same LSTM size (the published
  ``elmo_2x4096_512_2048cnn_2xhighway``, random weights) on the same
  sentences (``common.make_corpus``: 256 sentences, 6,297
  tokens), one fresh process per model and round, the two models
  alternating so that both see the same load of a shared machine.

Prints ONE JSON line. Usage::

    python bench/manylangs_convert.py                  # released size
    python bench/manylangs_convert.py --convert_only   # no embedding half
    python bench/manylangs_convert.py --quick          # tiny (CI smoke)

Each embedding process: import, load, one warm-up pass, ``--passes`` timed
passes; tokens/s is the median pass (real tokens only), ``peak_rss_mib``
the process's ``ru_maxrss``.
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

#: upstream's released configuration, by the name released config.json
#: files give (resolved to the packaged copy, as upstream does)
RELEASED_CONFIG_PATH = "/data/elmo/configs/cnn_50_100_512_4096_sample.json"

QUICK_CONFIG = {
    "encoder": {"name": "elmo", "projection_dim": 16, "cell_clip": 3,
                "proj_clip": 3, "dim": 64, "n_layers": 2},
    "token_embedder": {"name": "cnn", "activation": "relu",
                       "filters": [[1, 4], [2, 8], [3, 8]], "n_highway": 1,
                       "word_dim": 8, "char_dim": 4,
                       "max_characters_per_token": 50},
    "classifier": {"name": "sampled_softmax", "n_samples": 16},
    "dropout": 0.1,
}

CHAR_SPECIALS = ["<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>"]
WORD_SPECIALS = ["<oov>", "<bos>", "<eos>", "<pad>"]


# ------------------------------------------------------------- the model
def write_manylangs_model(model_dir: str, n_chars: int, n_words: int,
                          n_sentences: int, quick: bool) -> None:
    """A model directory in the released format (own process: torch)."""
    import torch

    from bilm_keras.weights.manylangs_config import PACKAGED_CONFIGS

    os.makedirs(model_dir, exist_ok=True)
    if quick:
        config = QUICK_CONFIG
        with open(os.path.join(model_dir, "quick.json"), "w") as f:
            json.dump(config, f)
        config_path = "quick.json"
    else:
        config_path = RELEASED_CONFIG_PATH
        config = PACKAGED_CONFIGS[os.path.basename(config_path)]
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump({"config_path": config_path, "model": model_dir}, f)

    # chars: ASCII, then CJK ideographs, then the specials (upstream's
    # char.dic order); words: the specials, the corpus words, fillers
    chars = [chr(c) for c in range(33, 127)]
    chars += [chr(0x4E00 + i) for i in range(n_chars - 6 - len(chars))]
    chars = chars[: n_chars - 6] + CHAR_SPECIALS
    corpus = common.make_corpus(n_sentences=n_sentences)
    words = WORD_SPECIALS + sorted({w for s in corpus for w in s})
    words += [f"w{i}" for i in range(n_words - len(words))]
    for name, tokens in (("char.dic", chars), ("word.dic", words)):
        with open(os.path.join(model_dir, name), "w", encoding="utf-8") as f:
            f.writelines(f"{t}\t{i}\n" for i, t in enumerate(tokens))

    enc, emb = config["encoder"], config["token_embedder"]
    P, C, D, W = (enc["projection_dim"], enc["dim"], emb["char_dim"],
                  emb["word_dim"])
    F = sum(n for _, n in emb["filters"])
    g = torch.Generator().manual_seed(0)

    def normal(*shape, std):
        return torch.randn(*shape, generator=g) * std

    token = {
        "word_emb_layer.embedding.weight": normal(len(words), W, std=0.1),
        "char_emb_layer.embedding.weight": normal(len(chars), D, std=0.1),
    }
    for i, (width, count) in enumerate(emb["filters"]):
        token[f"convolutions.{i}.weight"] = normal(
            count, D, width, std=(width * D) ** -0.5)
        token[f"convolutions.{i}.bias"] = normal(count, std=0.1)
    for k in range(emb["n_highway"]):
        token[f"highways._layers.{k}.weight"] = normal(2 * F, F,
                                                       std=F ** -0.5)
        token[f"highways._layers.{k}.bias"] = normal(2 * F, std=0.1)
    token["projection.weight"] = normal(P, W + F, std=(W + F) ** -0.5)
    token["projection.bias"] = normal(P, std=0.1)
    encoder = {}
    for layer in range(enc["n_layers"]):
        for d in ("forward", "backward"):
            k = f"{d}_layer_{layer}"
            encoder[f"{k}.input_linearity.weight"] = normal(
                4 * C, P, std=P ** -0.5)
            encoder[f"{k}.state_linearity.weight"] = normal(
                4 * C, P, std=P ** -0.5)
            bias = normal(4 * C, std=0.1)
            bias[C: 2 * C] += 1.0  # upstream's forget-gate init
            encoder[f"{k}.state_linearity.bias"] = bias
            encoder[f"{k}.state_projection.weight"] = normal(
                P, C, std=C ** -0.5)
    for name, state in (("token_embedder.pkl", token),
                        ("encoder.pkl", encoder)):
        torch.save(state, os.path.join(model_dir, name),
                   _use_new_zipfile_serialization=False)


# ------------------------------------------------------------- processes
def measure_conversion(model_dir: str, outdir: str) -> dict:
    t0 = time.perf_counter()
    from bilm_keras.weights.manylangs_conversion import convert_manylangs
    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    convert_manylangs(model_dir, outdir, overwrite=True)
    seconds = time.perf_counter() - t0
    return dict(convert_s=seconds, import_s=import_s,
                peak_rss_mib=common.peak_rss_mib(),
                tensorflow_imported="tensorflow" in sys.modules,
                weight_file_mb=os.path.getsize(
                    os.path.join(outdir, "lm_weights.hdf5")) / 1e6,
                pkl_mb=sum(os.path.getsize(os.path.join(model_dir, n)) / 1e6
                           for n in ("token_embedder.pkl", "encoder.pkl")))


def measure_embedding(options_file: str, weight_file: str, args) -> dict:
    corpus = common.make_corpus(n_sentences=args.n_sentences)
    n_tokens = sum(len(s) for s in corpus)
    t0 = time.perf_counter()
    from bilm_keras import BidirectionalLanguageModel
    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = BidirectionalLanguageModel(options_file, weight_file)
    load_s = time.perf_counter() - t0
    model.embed_sentences(corpus, batch_size=args.batch_size)  # warm-up
    times = common.time_passes(
        lambda: common.embed_corpus(model, corpus, args.batch_size),
        args.passes)
    return dict(tokens_per_s=n_tokens / statistics.median(times),
                pass_s_all=[round(t, 3) for t in times],
                peak_rss_mib=common.peak_rss_mib(), import_s=import_s,
                load_s=load_s, tokens=n_tokens,
                load_avg_1min=os.getloadavg()[0])


def _child(argv, python=sys.executable):
    """This script in a fresh process (``python``): its JSON line."""
    return common.run_json_child([os.path.abspath(__file__)] + argv,
                                 common.TF_CHILD_ENV, python)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny model and corpus; asserts nothing")
    parser.add_argument("--convert_only", action="store_true",
                        help="time the conversion only")
    parser.add_argument("--n_chars", type=int, default=None,
                        help="char.dic rows (default 3000; quick 200)")
    parser.add_argument("--n_words", type=int, default=None,
                        help="word.dic rows (default 50000; quick 2000)")
    parser.add_argument("--convert_rounds", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2,
                        help="embedding processes per model, alternating")
    parser.add_argument("--passes", type=int, default=None,
                        help="timed passes per embedding process")
    parser.add_argument("--batch_size", type=int, default=None,
                        help="embed_sentences' batch_size (default: none "
                             "given, the embedder's own compute batches)")
    parser.add_argument("--n_sentences", type=int, default=None)
    parser.add_argument("--workdir", default=None,
                        help="keep the models here (default: a temp dir)")
    parser.add_argument("--_write", nargs=1, help=argparse.SUPPRESS)
    parser.add_argument("--_convert", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--_embed", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    q = args.quick
    args.n_chars = args.n_chars or (200 if q else 3000)
    args.n_words = args.n_words or (2000 if q else 50000)
    args.passes = args.passes or (1 if q else 3)
    args.n_sentences = args.n_sentences or (20 if q else 256)

    if args._write:
        write_manylangs_model(args._write[0], args.n_chars, args.n_words,
                              args.n_sentences, q)
        return
    if args._convert:
        print(json.dumps(measure_conversion(*args._convert)))
        return
    if args._embed:
        print(json.dumps(measure_embedding(*args._embed, args)))
        return

    quick = ["--quick"] if q else []
    sizes = ["--n_chars", str(args.n_chars), "--n_words", str(args.n_words),
             "--n_sentences", str(args.n_sentences)]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        model_dir = os.path.join(work, "manylangs.model")
        converted = os.path.join(work, "converted")
        bilm_tf = os.path.join(work, "bilm_tf")
        t0 = time.perf_counter()
        # the writer measures nothing of ours: common.helper_python()
        _child(["--_write", model_dir] + sizes + quick,
               python=common.helper_python())
        write_s = time.perf_counter() - t0
        conversions = [_child(["--_convert", model_dir, converted] + quick)
                       for _ in range(args.convert_rounds)]
        report = dict(
            date=common.utc_now(),
            cpu=common.cpu_model(), cpu_count=os.cpu_count(),
            model=dict(n_chars=args.n_chars, n_words=args.n_words,
                       write_pkl_s=write_s, quick=q),
            convert_s_all=[round(c["convert_s"], 2) for c in conversions],
            convert_s=statistics.median(c["convert_s"] for c in conversions),
            convert_peak_rss_mib=max(c["peak_rss_mib"] for c in conversions),
            convert=conversions[-1],
        )
        if not args.convert_only:
            os.makedirs(bilm_tf, exist_ok=True)
            # the bilm-tf model of the same LSTM size
            common.write_model(bilm_tf, common.QUICK_OPTIONS if q
                               else common.PUBLISHED_OPTIONS_FILE)
            flags = ["--passes", str(args.passes)] + sizes + quick
            if args.batch_size is not None:
                flags += ["--batch_size", str(args.batch_size)]
            runs = {"manylangs": [], "bilm_tf": []}
            for _ in range(args.rounds):
                runs["manylangs"].append(_child(
                    ["--_embed", os.path.join(converted, "options.json"),
                     os.path.join(converted, "lm_weights.hdf5")] + flags))
                runs["bilm_tf"].append(_child(
                    ["--_embed", os.path.join(bilm_tf, "options.json"),
                     os.path.join(bilm_tf, "weights.hdf5")] + flags))
            for name, rs in runs.items():
                report[name] = dict(
                    tokens_per_s=statistics.median(
                        r["tokens_per_s"] for r in rs),
                    tokens_per_s_all=[round(r["tokens_per_s"], 1)
                                      for r in rs],
                    peak_rss_mib=max(r["peak_rss_mib"] for r in rs),
                    peak_rss_mib_all=[round(r["peak_rss_mib"], 1)
                                      for r in rs],
                    load_s=statistics.median(r["load_s"] for r in rs),
                    load_avg_1min_all=[r["load_avg_1min"] for r in rs],
                )
            report["tokens_per_s_ratio_by_round"] = [
                round(m["tokens_per_s"] / b["tokens_per_s"], 3)
                for m, b in zip(runs["manylangs"], runs["bilm_tf"])]
            report["tokens"] = runs["manylangs"][0]["tokens"]
    print(json.dumps(report))



if __name__ == "__main__":
    main()
