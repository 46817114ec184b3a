"""What ``bilm-keras embed --runner DirectRunner`` with two worker
processes costs against the plain ``bilm-keras embed``, on the same corpus,
model and machine.

Each arm is the whole command a user runs, in its own process (start-up,
the model's load in each worker, the pipeline, the merge): throughput is
real tokens over its wall time. Peak RSS is each process's high-water mark
(``VmHWM``), polled from ``/proc`` while the command runs: the launcher,
and each Beam worker (its grandchildren). The arms alternate round by
round so that a ratio sees one load; the figures are medians over the
rounds, the ratio the median of the per-round ratios.

Usage::

    python bench/embed_beam.py                  # published size, 3 rounds
    python bench/embed_beam.py --quick          # tiny model (a smoke run)
    python bench/embed_beam.py --rounds 5 --n_sentences 2048

Prints ONE JSON line (date, CPU, load, figures). The weights are random,
of the published model's size (``common.write_bench_model``'s); the
corpus is ``common.make_corpus``'s Zipfian sentences of 5-40 tokens.
Record the figures in ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import cpu_model, make_corpus, write_bench_model

#: two local worker processes: the smallest pool that splits the work
TWO_WORKERS = ["--runner", "DirectRunner", "--direct_num_workers", "2",
               "--direct_running_mode", "multi_processing"]


def _descendants(pid: int) -> list[int]:
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _peak_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _is_python(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"python" in f.read().split(b"\0")[0]
    except OSError:
        return False


def run_arm(argv: list[str]) -> dict:
    """Runs ``bilm-keras ARGV``; its wall time and the peak RSS of the
    launcher and of each Python process under it (MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bilm_keras.cli"] + argv,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks = {}
    while proc.poll() is None:
        for pid in [proc.pid] + _descendants(proc.pid):
            peak = _peak_mb(pid)
            if peak is not None and (pid == proc.pid or _is_python(pid)):
                peaks[pid] = max(peaks.get(pid, 0.0), peak)
        time.sleep(0.2)
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"bilm-keras {' '.join(argv[:2])} failed:\n"
                           f"{err[-4000:]}")
    launcher = peaks.pop(proc.pid, None)
    return {"seconds": seconds, "launcher_peak_mb": launcher,
            "worker_peaks_mb": sorted(peaks.values(), reverse=True)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a tiny model (a smoke run)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n_sentences", type=int, default=None,
                        help="default 1024 (64 with --quick)")
    parser.add_argument("--chunk_size", type=int, default=256,
                        help="embed's --chunk_size: lines per range, so "
                             "both workers get work")
    args = parser.parse_args(argv)
    n = args.n_sentences or (64 if args.quick else 1024)
    corpus = make_corpus(n_sentences=n)
    n_tokens = sum(len(s) for s in corpus)
    with tempfile.TemporaryDirectory() as workdir:
        write_bench_model(workdir, args.quick)  # a child process
        text = os.path.join(workdir, "corpus.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.writelines(" ".join(s) + "\n" for s in corpus)
        common = ["embed", "--options_file",
                  os.path.join(workdir, "options.json"), "--weight_file",
                  os.path.join(workdir, "weights.hdf5"), "--dataset_file",
                  text, "--chunk_size", str(args.chunk_size), "--top",
                  "--overwrite"]
        rounds = []
        for _ in range(args.rounds):
            plain = run_arm(common + ["--outfile",
                                      os.path.join(workdir, "plain.hdf5")])
            beam = run_arm(common + ["--outfile",
                                     os.path.join(workdir, "beam.hdf5")]
                           + TWO_WORKERS)
            rounds.append((plain, beam))
    med = statistics.median
    plain_tps = [n_tokens / p["seconds"] for p, _ in rounds]
    beam_tps = [n_tokens / b["seconds"] for _, b in rounds]
    workers = [b["worker_peaks_mb"] for _, b in rounds]
    print(json.dumps({
        "date": datetime.date.today().isoformat(),
        "cpu": cpu_model(), "n_cpus": os.cpu_count(),
        "load_avg_1min_at_end": round(os.getloadavg()[0], 2),
        "model": "tiny" if args.quick else "published size, random weights",
        "n_sentences": n, "n_tokens": n_tokens, "rounds": args.rounds,
        "output": "top", "chunk_size": args.chunk_size,
        "plain_tokens_per_s": round(med(plain_tps), 1),
        "beam_2_workers_tokens_per_s": round(med(beam_tps), 1),
        "beam_over_plain": round(med(
            b / p for b, p in zip(beam_tps, plain_tps)), 3),
        "plain_seconds": round(med(p["seconds"] for p, _ in rounds), 1),
        "beam_seconds": round(med(b["seconds"] for _, b in rounds), 1),
        "plain_peak_rss_mb": round(med(
            p["launcher_peak_mb"] for p, _ in rounds), 1),
        "beam_launcher_peak_rss_mb": round(med(
            b["launcher_peak_mb"] for _, b in rounds), 1),
        "beam_worker_peak_rss_mb": [round(med(w[k] for w in workers), 1)
                                    for k in range(min(map(len, workers)))],
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
