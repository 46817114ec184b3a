"""Converting a PaddleNLP ELMo ``.pdparams`` of the released size: our
restricted unpickler against numpy's own ``pickle.load``.

Writes a ``.pdparams`` of PaddleNLP's default ``ELMo`` (``elmo.py``: 16-dim
chars, the 7 filters of 2,048 in all, 2 highways, projection 512, 2 x 2
LSTMs of 512, each under both of its names as ``paddle.save`` writes
them, and a softmax over 150,004 ids: ``vocab-15w.txt``'s 150,000 words and
PaddleNLP's 4 specials), random weights, as a protocol-4 pickle of
``{name: ndarray}`` plus ``StructuredToParameterName@@`` (what
``paddle.save(state_dict)`` writes; this script's numpy names its module
``numpy._core``), and the vocabulary file. Then runs ``convert_paddle`` on
it in fresh processes, alternating two readers round by round (which goes
first alternates too):

* ``ours``: the package as it is (``bilm_keras.weights.paddle_pdparams``);
* ``pickle``: ``pickle.load`` (unrestricted: it would run any code the
  file names), patched in for ``paddlenlp_elmo.read_pdparams``: what the
  restriction costs.

Per process: ``convert_s`` (the whole ``convert_paddle`` call: reading,
checks, transforms, the HDF5 write), ``read_s`` (the ``.pdparams`` read
inside it) and peak RSS. The two readers' ``lm_weights.hdf5`` files are
compared dataset by dataset (they must be equal bit for bit). Prints ONE
JSON line: medians per reader and the median of the per-round ratios
pickle / ours. Usage::

    python bench/paddlenlp_convert.py                 # released size
    python bench/paddlenlp_convert.py --rounds 5
    python bench/paddlenlp_convert.py --quick         # tiny (CI smoke)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import common

READERS = ("ours", "pickle")
#: PaddleNLP's ELMo defaults (``elmo.py``, ``args.py``), and a tiny one
SIZES = {
    False: dict(char_dim=16, filters=[[1, 32], [2, 32], [3, 64], [4, 128],
                                      [5, 256], [6, 512], [7, 1024]],
                n_highway=2, projection_dim=512, n_layers=2,
                n_words=150_000),
    True: dict(char_dim=4, filters=[[1, 4], [2, 8]], n_highway=1,
               projection_dim=8, n_layers=2, n_words=100),
}


def paddlenlp_state(sizes: dict, seed: int = 0) -> dict:
    """PaddleNLP's ``ELMo(task='pre-train')`` state dict, random weights,
    in its key order."""
    import numpy as np

    rng = np.random.default_rng(seed)

    def w(*shape):
        return rng.uniform(-0.1, 0.1, shape).astype(np.float32)

    emb = "_token_embding_layer."
    n_filters = sum(n for _, n in sizes["filters"])
    p = sizes["projection_dim"]
    state = {emb + "_char_embedding_layer.weight": w(262, sizes["char_dim"])}
    for i, (width, num) in enumerate(sizes["filters"]):
        state[f"{emb}cnn_layer_{i}.weight"] = w(num, sizes["char_dim"], 1,
                                                width)
        state[f"{emb}cnn_layer_{i}.bias"] = w(num)
    for i in range(sizes["n_highway"]):
        for part in ("carry", "transform"):
            h = f"{emb}_highway_layer.{part}_linear_{i}."
            state[h + "weight"] = w(n_filters, n_filters)
            state[h + "bias"] = w(n_filters)
    if n_filters != p:
        state[emb + "_linear_layer.weight"] = w(n_filters, p)
        state[emb + "_linear_layer.bias"] = w(p)
    for direction in ("forward", "backward"):
        for layer in range(sizes["n_layers"]):
            lstm = f"_elmobilm.{direction}_lstm_layer_{layer}."
            arrays = dict(weight_ih=w(4 * p, p), weight_hh=w(4 * p, p),
                          bias_ih=w(4 * p))
            for name, value in arrays.items():
                state[f"{lstm}{name}_l0"] = value
            # paddle.save writes the cell's names as copies of their own
            for name, value in arrays.items():
                state[f"{lstm}0.cell.{name}"] = value.copy()
            state[f"{lstm}0.cell.bias_hh"] = np.zeros(4 * p, np.float32)
    state["_linear_layer.weight"] = w(p, sizes["n_words"] + 4)
    state["_linear_layer.bias"] = w(sizes["n_words"] + 4)
    state["StructuredToParameterName@@"] = {
        name: f"param_{i}.w_0" for i, name in enumerate(state)}
    return state


def write_pdparams(folder: str, quick: bool) -> dict:
    import pickle

    os.makedirs(folder, exist_ok=True)
    sizes = SIZES[quick]
    path = os.path.join(folder, "final.pdparams")
    with open(path, "wb") as f:
        pickle.dump(paddlenlp_state(sizes), f, protocol=4)
    vocab = os.path.join(folder, "vocab-15w.txt")
    with open(vocab, "w", encoding="utf-8") as f:
        f.writelines(f"w{i}\n" for i in range(sizes["n_words"]))
    return dict(pdparams=path, vocab=vocab)


def measure_conversion(pdparams: str, vocab: str, outdir: str,
                       reader: str) -> dict:
    import pickle

    from bilm_keras.weights import paddlenlp_elmo
    from bilm_keras.weights.paddle_conversion import convert_paddle

    def unrestricted(path):
        with open(path, "rb") as f:
            return pickle.load(f)

    read_s = common.time_calls(
        paddlenlp_elmo, "read_pdparams",
        paddlenlp_elmo.read_pdparams if reader == "ours" else unrestricted)
    t0 = time.perf_counter()
    convert_paddle(pdparams, outdir, vocab_file=vocab, overwrite=True)
    convert_s = time.perf_counter() - t0
    return dict(reader=reader, convert_s=convert_s, read_s=sum(read_s),
                peak_rss_mib=common.peak_rss_mib(),
                tensorflow_imported="tensorflow" in sys.modules)


def _child(argv):
    """This script in a fresh process: its JSON line."""
    return common.run_json_child([os.path.abspath(__file__)] + argv)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny model; asserts nothing about speed")
    parser.add_argument("--rounds", type=int, default=3,
                        help="conversions per reader, alternating")
    parser.add_argument("--workdir", default=None,
                        help="keep the files here (default: a temp dir)")
    parser.add_argument("--_write", nargs=1, help=argparse.SUPPRESS)
    parser.add_argument("--_convert", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args._write:
        print(json.dumps(write_pdparams(args._write[0], args.quick)))
        return
    if args._convert:
        print(json.dumps(measure_conversion(*args._convert)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        t0 = time.perf_counter()
        files = _child(["--_write", os.path.join(work, "checkpoints")]
                       + (["--quick"] if args.quick else []))
        write_s = time.perf_counter() - t0
        runs = common.alternating_rounds(READERS, args.rounds, lambda r: (
            _child(["--_convert", files["pdparams"], files["vocab"],
                    os.path.join(work, f"converted-{r}"), r])))
        equal = common.same_hdf5_datasets(
            *(os.path.join(work, f"converted-{r}", "lm_weights.hdf5")
              for r in READERS))
        report = dict(
            date=common.utc_now(),
            cpu=common.cpu_model(), cpu_count=os.cpu_count(),
            load_avg_1min=os.getloadavg()[0],
            model=dict(SIZES[args.quick], quick=args.quick,
                       pdparams_mb=round(os.path.getsize(
                           files["pdparams"]) / 1e6, 1),
                       hdf5_mb=round(os.path.getsize(os.path.join(
                           work, "converted-ours", "lm_weights.hdf5"))
                           / 1e6, 1),
                       write_s=round(write_s, 2)),
            weights_equal=equal)
        for reader, rs in runs.items():
            report[reader] = common.reader_summary(rs)
        report.update(common.ratios_over_ours(runs, "pickle"))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
