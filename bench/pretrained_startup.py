"""Start-up of a cached published model: ``from_pretrained(name)`` against
the same files passed by path, load to first batch.

Writes a model of the published size (the preset
``elmo_2x4096_512_2048cnn_2xhighway``, 93.6 M parameters, random weights,
bilm-tf's HDF5; ``--quick``: the ``tiny`` preset), serves it once from a
local mirror at ``elmo-original``'s registry paths so that
``resolve_model`` downloads it into a fresh cache (the user's path), then
stops the server and points ``BILM_KERAS_MODEL_MIRROR`` at an address
where nothing listens: a cached model needs no network.

Then, round by round, fresh processes, alternating the two ways (and which
goes first):

* ``by_name``: ``BidirectionalLanguageModel.from_pretrained("elmo-original")``;
* ``by_path``: ``BidirectionalLanguageModel(options_file, weight_file)`` on
  the cached files themselves;

each followed by ``embed_sentences`` of one batch (``--sentences`` of
``--tokens`` tokens). Per process: ``import_s`` (``bilm_keras`` and
TensorFlow), ``load_s`` (the constructor or ``from_pretrained``),
``first_batch_s``, ``startup_s = load_s + first_batch_s`` (load to first
batch), ``process_s`` (the whole process as the parent sees it) and peak
RSS; ``resolve_cached_s`` is the cached look-up alone (``resolve_model``: the
registry and the manifest), which ``by_path`` runs before its clock. The two
ways' vectors are compared (equal bit for bit: the same files). Prints ONE JSON
line: medians per way and the medians of the per-round ratios ``by_name /
by_path``. Usage::

    python bench/pretrained_startup.py                # published size
    python bench/pretrained_startup.py --rounds 7
    python bench/pretrained_startup.py --quick        # tiny (CI smoke)
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse

from common import (
    checkout_child_env,
    cpu_model,
    helper_python,
    run_json_child,
)

NAME = "elmo-original"
WAYS = ("by_name", "by_path")


# ------------------------------------------------------------- children
def write_model(out_dir: str, preset: str) -> None:
    """Random weights of ``preset`` in bilm-tf's layout: ``out_dir``'s
    ``options.json`` and ``lm_weights.hdf5``."""
    from bilm_keras.models.bilm_backbone import BiLMBackbone
    from bilm_keras.presets import load_preset, preset_file
    from bilm_keras.weights.bilm_tf_hdf5 import save_bilm_tf_hdf5

    os.makedirs(out_dir, exist_ok=True)
    backbone = BiLMBackbone.from_options(load_preset(preset)).build_all()
    save_bilm_tf_hdf5(backbone, os.path.join(out_dir, "lm_weights.hdf5"))
    shutil.copyfile(preset_file(preset),
                    os.path.join(out_dir, "options.json"))


def sentences(n: int, tokens: int) -> list:
    """``n`` sentences of ``tokens`` made-up words (seeded)."""
    rng = random.Random(0)
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
             for _ in range(500)]
    return [[rng.choice(words) for _ in range(tokens)] for _ in range(n)]


def measure(way: str, cache: str, out: str, n: int, tokens: int) -> dict:
    """One process's start-up, the ``way`` given."""
    t0 = time.perf_counter()
    import numpy as np
    import tensorflow as tf  # noqa: F401

    from bilm_keras import BidirectionalLanguageModel
    from bilm_keras.pretrained import resolve_model

    import_s = time.perf_counter() - t0
    batch = sentences(n, tokens)
    resolve_s = None
    if way == "by_path":  # the cache's files, found before the clock
        t = time.perf_counter()
        files = resolve_model(NAME, cache_dir=cache)
        resolve_s = time.perf_counter() - t  # what by_name adds
    t1 = time.perf_counter()
    if way == "by_name":
        bilm = BidirectionalLanguageModel.from_pretrained(NAME,
                                                          cache_dir=cache)
    else:
        bilm = BidirectionalLanguageModel(files.options_file,
                                          files.weight_file)
    t2 = time.perf_counter()
    vectors = bilm.embed_sentences(batch)
    t3 = time.perf_counter()
    np.savez(out, *vectors)
    return dict(way=way, import_s=import_s, resolve_s=resolve_s,
                load_s=t2 - t1,
                first_batch_s=t3 - t2, startup_s=t3 - t1,
                peak_rss_mib=resource.getrusage(
                    resource.RUSAGE_SELF).ru_maxrss / 1024)


def _child(argv, env=None, python=sys.executable):
    env = checkout_child_env(**(env or {}))
    t0 = time.perf_counter()
    result = run_json_child([os.path.abspath(__file__)] + argv, env, python)
    if result is not None:
        result["process_s"] = time.perf_counter() - t0
    return result


# --------------------------------------------------------------- parent
def cache_through_a_mirror(model_dir: str, cache: str) -> dict:
    """Serves ``model_dir``'s two files at the registry's paths of
    :data:`NAME` and resolves it into ``cache``; returns how long that
    took and the cached files."""
    from bilm_keras.pretrained import registered_model, resolve_model

    model = registered_model(NAME)
    root = os.path.join(os.path.dirname(cache), "served")
    for url, name in ((model.options_url, "options.json"),
                      (model.weight_url, "lm_weights.hdf5")):
        path = os.path.join(root, urllib.parse.urlsplit(url).path.lstrip(
            "/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.link(os.path.join(model_dir, name), path)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        t0 = time.perf_counter()
        resolved = resolve_model(
            NAME, cache_dir=cache, progress=False,
            mirror=f"http://127.0.0.1:{server.server_address[1]}")
        fetch_s = time.perf_counter() - t0
    finally:
        server.shutdown()
        server.server_close()
    shutil.rmtree(root)
    return dict(fetch_s=fetch_s, directory=resolved.directory)


def _nowhere() -> str:
    """An http URL on 127.0.0.1 where nothing listens."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def same_vectors(a: str, b: str) -> bool:
    import numpy as np

    with np.load(a) as x, np.load(b) as y:
        return sorted(x.files) == sorted(y.files) and all(
            x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k])
            for k in x.files)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="the tiny preset; asserts nothing about speed")
    parser.add_argument("--rounds", type=int, default=5,
                        help="processes per way, alternating")
    parser.add_argument("--sentences", type=int, default=16,
                        help="sentences in the first batch")
    parser.add_argument("--tokens", type=int, default=20,
                        help="tokens per sentence")
    parser.add_argument("--workdir", default=None,
                        help="keep the files here (default: a temp dir)")
    parser.add_argument("--_write", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--_measure", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args._write:
        write_model(*args._write)
        return
    if args._measure:
        print(json.dumps(measure(*args._measure, args.sentences,
                                 args.tokens)))
        return

    preset = "tiny" if args.quick else "elmo_2x4096_512_2048cnn_2xhighway"
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        model_dir = os.path.join(work, "written")
        cache = os.path.join(work, "cache")
        shutil.rmtree(cache, ignore_errors=True)
        t0 = time.perf_counter()
        _child(["--_write", model_dir, preset], python=helper_python())
        write_s = time.perf_counter() - t0
        fetched = cache_through_a_mirror(model_dir, cache)
        # from here on the cache alone: no mirror to reach
        env = {"BILM_KERAS_MODEL_MIRROR": _nowhere()}
        runs = {way: [] for way in WAYS}
        for r in range(args.rounds):
            order = WAYS if r % 2 == 0 else WAYS[::-1]
            for way in order:
                out = os.path.join(work, f"{way}.npz")
                runs[way].append(_child(
                    ["--_measure", way, cache, out,
                     "--sentences", str(args.sentences),
                     "--tokens", str(args.tokens)], env))
        report = dict(
            date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            cpu=cpu_model(), cpu_count=os.cpu_count(),
            load_avg_1min=os.getloadavg()[0],
            model=dict(preset=preset, registered_as=NAME,
                       weights_mb=round(os.path.getsize(os.path.join(
                           model_dir, "lm_weights.hdf5")) / 1e6, 1),
                       write_s=round(write_s, 2),
                       fetch_into_cache_s=round(fetched["fetch_s"], 2)),
            batch=dict(sentences=args.sentences, tokens=args.tokens),
            vectors_equal=same_vectors(
                *(os.path.join(work, f"{way}.npz") for way in WAYS)))
        keys = ("import_s", "load_s", "first_batch_s", "startup_s",
                "process_s")
        for way, rs in runs.items():
            report[way] = {key: round(statistics.median(x[key] for x in rs),
                                      3) for key in keys}
            report[way]["startup_s_all"] = [round(x["startup_s"], 3)
                                            for x in rs]
            report[way]["peak_rss_mib"] = round(max(
                x["peak_rss_mib"] for x in rs), 1)
        # the cached lookup itself (registry, manifest), timed by_path
        report["resolve_cached_s"] = round(statistics.median(
            x["resolve_s"] for x in runs["by_path"]), 4)
        for key in ("load_s", "startup_s", "process_s"):
            ratios = [n[key] / p[key]
                      for n, p in zip(runs["by_name"], runs["by_path"])]
            report[f"{key}_ratio_name_over_path"] = round(
                statistics.median(ratios), 3)
            report[f"{key}_ratio_by_round"] = [round(x, 3) for x in ratios]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
