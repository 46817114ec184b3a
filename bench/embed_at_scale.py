"""Embedding a large corpus: resume, shards, merge and memory, measured
through the ``bilm-keras`` command itself (one process per command, as a
user or a cluster job runs it).

Usage::

    python bench/embed_at_scale.py              # everything, ~10 minutes
    python bench/embed_at_scale.py --quick      # small sizes (a smoke run)
    python bench/embed_at_scale.py --only shards --rounds 3 [--no_pin]

What it measures (prints one JSON line, and a table on stderr):

* ``shards_vs_threads``: the same corpus embedded (a) by one process of
  two threads and (b) by two processes of one thread each, ``--shard 0/2``
  and ``--shard 1/2`` at the same time, each pinned to its own core
  (``taskset``), then ``merge-embeddings``: real tokens per second of the
  whole job (wall clock, TensorFlow's start-up included) and of the
  embedding alone (the progress bars' final rates, summed over the two
  shards), side by side.
  Model: the ``small`` preset (LSTM 1024, projection 128) with random
  weights.
* ``resume``: a run killed (SIGKILL) once two of its five parts are on
  disk, then ``--resume``d, against the uninterrupted run (three rounds,
  interleaved; medians): the time already spent, the time to continue
  (and its ratio to 3/5 of the uninterrupted run), and the overhead (both
  runs less the uninterrupted one: a second start-up, the half-written
  part, checking the kept parts).
* ``rss``: peak RSS (``wait4``'s ``ru_maxrss``) of ``embed``, of the
  resumed run and of ``merge-embeddings`` at two corpus sizes (10x
  apart): flat means the same at both.
* ``merge``: ``merge-embeddings`` of two shards of 100,000 sentences
  (every layer, float32): time and peak RSS.
  Model of these three: the benchmarks' tiny model (LSTM 64, projection
  16, ``common.QUICK_OPTIONS``) with random weights.

The machine may be shared with other jobs (the load average is reported):
compare figures of one run only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import common
from common import QUICK_OPTIONS, SMALL_OPTIONS_FILE, write_model
from common import write_corpus_file as write_corpus


# --------------------------------------------------------------- helpers
def _env(threads: int | None = None) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if threads is not None:
        env.update(TF_NUM_INTRAOP_THREADS=str(threads),
                   TF_NUM_INTEROP_THREADS=str(threads),
                   OMP_NUM_THREADS=str(threads))
    return env


def command(args, *, threads=None, core=None) -> list:
    prefix = [] if core is None else ["taskset", "-c", str(core)]
    return prefix + [sys.executable, "-m", "bilm_keras.cli", *map(str, args)]


def start(args, *, threads=None, core=None) -> subprocess.Popen:
    return subprocess.Popen(command(args, threads=threads, core=core),
                            cwd=common.REPO_ROOT, env=_env(threads),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def wait(proc: subprocess.Popen, started: float) -> dict:
    """Waits for ``proc``: its wall time, its own peak RSS (MiB) and the
    token rate of its progress bar (embedding only: after start-up)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    err = proc.stderr.read().decode("utf-8", "replace")
    if proc.returncode not in (0, -signal.SIGKILL):
        raise RuntimeError(f"{proc.args}: exit {proc.returncode}: "
                           f"{err[-2000:]}")
    result = dict(seconds=round(seconds, 2),
                  peak_rss_mib=round(usage.ru_maxrss / 1024, 1))
    rates = re.findall(r"([\d,]+) tokens/s", err)
    if rates:
        result["bar_tokens_per_s"] = int(rates[-1].replace(",", ""))
    return result


def wait_all(procs, started) -> list:
    """:func:`wait` for processes that run at the same time, each timed
    to its own end."""
    results = [None] * len(procs)

    def one(k):
        results[k] = wait(procs[k], started)

    threads = [threading.Thread(target=one, args=(k,))
               for k in range(len(procs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def run(args, **kwargs) -> dict:
    started = time.perf_counter()
    return wait(start(args, **kwargs), started)


def embed_args(model, corpus, outfile, *extra):
    return ["embed", "--options_file", model[0], "--weight_file", model[1],
            "--dataset_file", corpus, "--outfile", outfile, *extra]


# ----------------------------------------------------------- the figures
def shards_vs_threads(work, n_sentences, rounds=1, pin=True) -> dict:
    """``rounds`` times, alternately: one process of two threads, then
    two shards of one thread each at once (+ their merge)."""
    model = write_model(os.path.join(work, "small"), SMALL_OPTIONS_FILE)
    corpus = os.path.join(work, "small.txt")
    n_tokens = write_corpus(corpus, n_sentences, seed=7)
    ones, twos = [], []
    for r in range(rounds):
        one = run(embed_args(model, corpus,
                             os.path.join(work, f"one-{r}.hdf5"),
                             "--average"), threads=2)
        ones.append(dict(**one, tokens_per_s=round(
            n_tokens / one["seconds"])))
        started = time.perf_counter()
        shards = [os.path.join(work, f"shard-{r}-{k}.hdf5")
                  for k in range(2)]
        procs = [start(embed_args(model, corpus, shards[k], "--average",
                                  "--shard", f"{k}/2"),
                       threads=1, core=k if pin else None)
                 for k in range(2)]
        results = wait_all(procs, started)
        merge = run(["merge-embeddings", "--outfile",
                     os.path.join(work, f"merged-{r}.hdf5"), *shards])
        both = max(x["seconds"] for x in results)
        twos.append(dict(
            seconds=both, shards=results,
            tokens_per_s=round(n_tokens / both),
            bar_tokens_per_s_sum=sum(x.get("bar_tokens_per_s", 0)
                                     for x in results),
            merge_seconds=merge["seconds"],
            tokens_per_s_with_merge=round(
                n_tokens / (both + merge["seconds"]))))
    keys = ("tokens_per_s", "bar_tokens_per_s")
    return dict(
        model="the small preset, random weights, --average",
        n_sentences=n_sentences, n_tokens=n_tokens, rounds=rounds,
        pinned=pin,
        one_process_two_threads=ones, two_processes_one_thread=twos,
        median_tokens_per_s=dict(
            one_process_two_threads={k: statistics.median(
                x.get(k, 0) for x in ones) for k in keys},
            two_processes_one_thread={
                "tokens_per_s": statistics.median(
                    x["tokens_per_s"] for x in twos),
                "bar_tokens_per_s": statistics.median(
                    x["bar_tokens_per_s_sum"] for x in twos)}))


def resume(work, model, corpus, n_tokens, chunk, rounds) -> dict:
    """``rounds`` times, interleaved (a shared machine's load hits all
    three alike): uninterrupted, killed after 2 parts, resumed."""
    runs = {"uninterrupted": [], "killed_after_2_parts": [], "resumed": []}
    for r in range(rounds):
        runs["uninterrupted"].append(run(embed_args(
            model, corpus, os.path.join(work, f"full-{r}.hdf5"),
            "--chunk_size", chunk)))
        out = os.path.join(work, f"killed-{r}.hdf5")
        started = time.perf_counter()
        proc = start(embed_args(model, corpus, out, "--chunk_size", chunk))
        folder = out + ".partial"
        while proc.poll() is None:
            parts = [n for n in os.listdir(folder) if n.endswith(".hdf5")] \
                if os.path.isdir(folder) else []
            if len(parts) >= 2:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.05)
        runs["killed_after_2_parts"].append(wait(proc, started))
        runs["resumed"].append(run(embed_args(
            model, corpus, out, "--chunk_size", chunk, "--resume")))
        for path in (out, os.path.join(work, f"full-{r}.hdf5")):
            os.remove(path)
    median = {name: dict(
        seconds=statistics.median(x["seconds"] for x in results),
        peak_rss_mib=max(x["peak_rss_mib"] for x in results))
        for name, results in runs.items()}
    full, killed, resumed = (median[k]["seconds"] for k in runs)
    return dict(
        chunk_size=int(chunk), rounds=rounds, runs=runs, median=median,
        overhead_seconds=round(killed + resumed - full, 2),
        continue_over_remaining=round(
            resumed / (full * (1 - 2 * int(chunk) / (5 * int(chunk)))), 2),
        tokens_per_s_uninterrupted=round(n_tokens / full))


def sizes(work, model, n_small, n_large) -> dict:
    out = {}
    for n in (n_small, n_large):
        corpus = os.path.join(work, f"corpus-{n}.txt")
        n_tokens = write_corpus(corpus, n)
        shards = [os.path.join(work, f"part-{n}-{k}.hdf5") for k in range(2)]
        embeds = [run(embed_args(model, corpus, shards[k], "--shard",
                                 f"{k}/2")) for k in range(2)]
        merged = os.path.join(work, f"all-{n}.hdf5")
        merge = run(["merge-embeddings", "--outfile", merged, *shards])
        out[n] = dict(n_tokens=n_tokens, embed_shards=embeds, merge=merge,
                      output_mib=round(os.path.getsize(merged) / 2**20))
        for path in shards + [merged]:
            os.remove(path)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes: a smoke run")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds of the shards-vs-threads comparison")
    parser.add_argument("--no_pin", action="store_true",
                        help="do not pin each shard to its own core")
    parser.add_argument("--only", choices=["shards"], default=None,
                        help="only the shards-vs-threads comparison")
    args = parser.parse_args(argv)
    work = args.workdir or tempfile.mkdtemp(prefix="embed_at_scale-")
    n_threads_corpus = 300 if args.quick else 3000
    n_resume = 2000 if args.quick else 20000
    n_small, n_large = (1000, 4000) if args.quick else (10000, 100000)
    load = os.getloadavg()
    try:
        report = dict(cpu_count=os.cpu_count(),
                      loadavg_at_start=[round(x, 2) for x in load])
        report["shards_vs_threads"] = shards_vs_threads(
            work, n_threads_corpus, rounds=args.rounds, pin=not args.no_pin)
        if args.only == "shards":
            print(json.dumps(report))
            return
        tiny = write_model(os.path.join(work, "tiny"), QUICK_OPTIONS)
        corpus = os.path.join(work, "resume.txt")
        n_tokens = write_corpus(corpus, n_resume, seed=3)
        report["resume"] = resume(work, tiny, corpus, n_tokens,
                                  str(n_resume // 5), rounds=3)
        report["sizes"] = sizes(work, tiny, n_small, n_large)
        report["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
