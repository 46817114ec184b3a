"""Converting an ELMoForManyLangs model: our .pkl reader against torch.load.

Writes a released-size ELMoForManyLangs model directory (upstream's
``cnn_50_100_512_4096_sample.json``, random weights, both .pkl files in
torch's legacy serialization as torch 0.4 wrote them; the writer of
``manylangs_convert.py``), then runs ``convert_manylangs`` on it in fresh
processes, alternating two readers round by round (which goes first
alternates too):

* ``ours``: the package as it is (``bilm_keras.weights.torch_pickle``),
  with ``import torch`` blocked in the process;
* ``torch``: the reader the package had before, ``torch.load(...,
  weights_only=True)`` then ``.to(torch.float32).numpy()`` per key,
  patched in for ``manylangs_conversion.read_state_dict``; ``import torch``
  is timed apart (``torch_import_s``) before the conversion starts.

Per process: ``convert_s`` (the whole ``convert_manylangs`` call: reading,
checks, transforms, the HDF5 write), ``read_s`` (the two .pkl reads inside
it) and peak RSS. The two
readers' ``lm_weights.hdf5`` files are compared dataset by dataset (they
must be equal bit for bit). Prints ONE JSON line: medians per reader and
the median of the per-round ratios torch / ours. Usage::

    python bench/manylangs_pkl_reader.py                 # released size
    python bench/manylangs_pkl_reader.py --rounds 5
    python bench/manylangs_pkl_reader.py --quick         # tiny (CI smoke)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import common

READERS = ("ours", "torch")


def torch_read_state_dict(path: str):
    """The package's reader before torch_pickle (torch.load, float32)."""
    import numpy as np
    import torch

    from bilm_keras.weights.manylangs_pkl import ManyLangsWeightError

    state = torch.load(path, map_location="cpu", weights_only=True)
    arrays = {}
    for key, value in state.items():
        if not value.is_floating_point():
            raise ManyLangsWeightError(f"{path}: key {key!r}: {value.dtype}")
        arrays[key] = value.detach().to(torch.float32).numpy()
    assert all(isinstance(a, np.ndarray) for a in arrays.values())
    return arrays


def measure_conversion(model_dir: str, outdir: str, reader: str) -> dict:
    torch_import_s = 0.0
    if reader == "ours":
        sys.modules["torch"] = None  # the package must not need it
    else:  # timed apart: a cost the user pays once per process
        t0 = time.perf_counter()
        import torch  # noqa: F401
        torch_import_s = time.perf_counter() - t0
    from bilm_keras.weights import manylangs_conversion

    read_s = common.time_calls(
        manylangs_conversion, "read_state_dict",
        manylangs_conversion.read_state_dict if reader == "ours"
        else torch_read_state_dict)
    t0 = time.perf_counter()
    manylangs_conversion.convert_manylangs(model_dir, outdir, overwrite=True)
    convert_s = time.perf_counter() - t0
    return dict(
        reader=reader, convert_s=convert_s, read_s=sum(read_s),
        torch_import_s=torch_import_s,
        peak_rss_mib=common.peak_rss_mib(),
        torch_imported=sys.modules.get("torch") is not None,
        tensorflow_imported="tensorflow" in sys.modules)


def _child(argv, python=sys.executable):
    """This script in a fresh process (``python``): its JSON line."""
    return common.run_json_child([os.path.abspath(__file__)] + argv,
                                 common.TF_CHILD_ENV, python)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny model; asserts nothing about speed")
    parser.add_argument("--rounds", type=int, default=3,
                        help="conversions per reader, alternating")
    parser.add_argument("--n_chars", type=int, default=None,
                        help="char.dic rows (default 3000; quick 200)")
    parser.add_argument("--n_words", type=int, default=None,
                        help="word.dic rows (default 50000; quick 2000)")
    parser.add_argument("--workdir", default=None,
                        help="keep the files here (default: a temp dir)")
    parser.add_argument("--_write", nargs=1, help=argparse.SUPPRESS)
    parser.add_argument("--_convert", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    q = args.quick
    args.n_chars = args.n_chars or (200 if q else 3000)
    args.n_words = args.n_words or (2000 if q else 50000)

    if args._write:  # torch writes the model (its own process)
        from manylangs_convert import write_manylangs_model

        write_manylangs_model(args._write[0], args.n_chars, args.n_words,
                              n_sentences=20 if q else 256, quick=q)
        return
    if args._convert:
        print(json.dumps(measure_conversion(*args._convert)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        model_dir = os.path.join(work, "manylangs.model")
        t0 = time.perf_counter()
        # the writer measures nothing of ours: common.helper_python()
        _child(["--_write", model_dir, "--n_chars", str(args.n_chars),
                "--n_words", str(args.n_words)] + (["--quick"] if q else []),
               python=common.helper_python())
        write_s = time.perf_counter() - t0
        runs = common.alternating_rounds(READERS, args.rounds, lambda r: (
            _child(["--_convert", model_dir,
                    os.path.join(work, f"converted-{r}"), r])))
        equal = common.same_hdf5_datasets(
            *(os.path.join(work, f"converted-{r}", "lm_weights.hdf5")
              for r in READERS))
        report = dict(
            date=common.utc_now(),
            cpu=common.cpu_model(), cpu_count=os.cpu_count(),
            load_avg_1min=os.getloadavg()[0],
            model=dict(n_chars=args.n_chars, n_words=args.n_words, quick=q,
                       pkl_mb=sum(os.path.getsize(os.path.join(
                           model_dir, n)) / 1e6 for n in (
                               "token_embedder.pkl", "encoder.pkl")),
                       write_pkl_s=round(write_s, 2)),
            weights_equal=equal)
        for reader, rs in runs.items():
            report[reader] = common.reader_summary(
                rs, medians=("convert_s", "read_s", "torch_import_s"),
                flags=("torch_imported", "tensorflow_imported"))
        report.update(common.ratios_over_ours(runs, "torch"))
        # as a user meets it: a fresh process that must import torch first
        report["convert_with_import_ratio_torch_over_ours"] = (
            common.median_ratio(
                [t["convert_s"] + t["torch_import_s"] for t in runs["torch"]],
                [o["convert_s"] for o in runs["ours"]]))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
