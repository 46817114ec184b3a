"""``bilm-keras serve`` under load: an asyncio httpx client against the
server started as a child process on 127.0.0.1, bounded in requests and
time. Prints ONE JSON line.

Usage::

    python bench/serve_load.py             # published shapes, 64 clients, 60 s
    python bench/serve_load.py --quick     # tiny model, seconds (CI smoke)
    python bench/serve_load.py --phases load,bulk --duration 30

The model has the published model's shapes
(``elmo_2x4096_512_2048cnn_2xhighway``) with random weights
(``common.write_model``: written by a child, loaded through the real
loader by the server). The sentences are real English of mixed lengths
(3-40 tokens): the standard library's docstrings
(:mod:`bilm_keras.data.stdlib_corpus`). Requests go to ``POST
/v1/embeddings`` with 1-8 sentences each (base64 vectors, so the client's
own decoding costs little of the shared CPU).

Phases (``--phases``, in this order; ``sigterm`` ends the server):

* ``bulk``: ``embed_sentences(output="sentence_mean")``, the same output,
  in a child of its own while the server idles: real tokens/s, median of
  ``--bulk_passes`` passes over 256 sentences, before and after ``load``;
  and the direct call's time on each lone request's sentences.
* ``lone``: one request at a time (the same sentences): latency, median.
* ``load``: ``--clients`` clients for ``--duration`` s: statuses, p50,
  p95 and p99 latency, the server's real tokens/s, and its ratio to
  ``bulk``'s.
* ``overload``: bursts of twice ``--max_concurrent_requests`` requests
  at once for ``--overload_s`` s: the statuses (only 200 and 429
  expected), the server's RSS before and after.
* ``rss``: ``--rss_requests`` requests of one sentence, 16 at a time,
  after ``--rss_warmup`` of them: the server's RSS growth.
* ``sigterm``: 32 clients; SIGTERM after ``--sigterm_after_s``: every
  request the server accepted answered (200, or 503 once it drains; no
  connection cut mid-answer) and exit status 0.

The machine may be shared: the figures that hold are ratios taken in one
run (server against bulk), with ``uptime``'s load beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import common

PHASES = ("bulk", "lone", "load", "overload", "rss", "sigterm")


def corpus(n: int, seed: int) -> list:
    """``n`` real sentences of 3-40 tokens (token lists), drawn with
    ``seed`` from the standard library's docstrings."""
    from bilm_keras.data.stdlib_corpus import stdlib_sentences

    pool = [s.split() for s in stdlib_sentences(lowercase=False)]
    pool = [s for s in pool if 3 <= len(s) <= 40]
    return random.Random(seed).choices(pool, k=n)


def requests_of(n_requests: int, seed: int, max_sentences: int = 8) -> list:
    """``n_requests`` lists of 1..``max_sentences`` sentences."""
    rng = random.Random(seed)
    sentences = corpus(n_requests * max_sentences, seed)
    return [rng.sample(sentences, rng.randint(1, max_sentences))
            for _ in range(n_requests)]


def percentile(values, q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q / 100 * len(values)))]


# ----------------------------------------------------------- bulk (child)
def measure_bulk(workdir: str, args) -> dict:
    """The bulk path on the same output: tokens/s, and each lone
    request's direct time."""
    from bilm_keras import BidirectionalLanguageModel

    model = BidirectionalLanguageModel(
        os.path.join(workdir, "options.json"),
        os.path.join(workdir, "weights.hdf5"))
    sentences = corpus(args.bulk_sentences, seed=7)
    tokens = sum(len(s) for s in sentences)
    model.embed_sentences(sentences, output="sentence_mean")  # warm-up
    passes = common.time_passes(
        lambda: model.embed_sentences(sentences, output="sentence_mean"),
        args.bulk_passes)
    lone = []
    for request in requests_of(args.lone_requests, seed=11):
        start = time.perf_counter()
        model.embed_sentences(request, output="sentence_mean")
        lone.append(time.perf_counter() - start)
    return {"tokens": tokens, "tokens_per_s": tokens / statistics.median(
        passes), "pass_s": passes, "lone_s": lone}


# -------------------------------------------------------------- the server
class Server:
    """``bilm-keras serve`` in a child process on a free port."""

    def __init__(self, workdir: str, args):
        argv = [sys.executable, "-m", "bilm_keras.cli", "serve",
                "--model", f"bench={workdir}", "--port", "0",
                "--max_concurrent_requests",
                str(args.max_concurrent_requests),
                "--max_wait_ms", str(args.max_wait_ms),
                "--max_batch_tokens", str(args.max_batch_tokens)]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, **common.checkout_child_env()))
        lines = []
        for line in self.proc.stdout:  # the library's lines, then the URL
            lines.append(line)
            if " on http://" in line:
                break
        else:
            self.proc.kill()
            raise RuntimeError(f"the server did not start:\n"
                               f"{''.join(lines)}"
                               f"{self.proc.stderr.read()[-3000:]}")
        self.url = line.split(" on ")[1].split()[0]
        assert self.url.startswith("http://127.0.0.1:"), self.url

    def rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def stderr_tail(self) -> str:
        """The server's standard error, read once it has exited."""
        if not hasattr(self, "_stderr"):
            self._stderr = self.proc.stderr.read()
        return self._stderr

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=120)


# -------------------------------------------------------------- the client
async def _post(client, url, request, log):
    start = time.perf_counter()
    try:
        response = await client.post(url + "/v1/embeddings", json={
            "model": "bench", "input": [" ".join(s) for s in request],
            "encoding_format": "base64"})
        status = response.status_code
        if status == 200:
            assert len(response.json()["data"]) == len(request)
    except Exception as e:  # a connection refused or cut
        status = type(e).__name__
    log.append((status, time.perf_counter() - start,
                sum(len(s) for s in request)))


async def run_clients(url, requests, n_clients, duration_s, stop=None):
    """``n_clients`` clients, each sending the next request as soon as it
    has its answer, until ``duration_s`` or the requests run out (or
    ``stop`` is set). Returns ``(log, seconds)``."""
    import httpx

    log, pending = [], iter(requests)
    deadline = time.perf_counter() + duration_s
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(
            max_connections=n_clients, max_keepalive_connections=n_clients)
            ) as client:
        async def one_client():
            while time.perf_counter() < deadline and not (stop and
                                                           stop.is_set()):
                request = next(pending, None)
                if request is None:
                    return
                await _post(client, url, request, log)

        start = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(n_clients)))
        return log, time.perf_counter() - start


def statuses(log) -> dict:
    counts = {}
    for status, _, _ in log:
        counts[str(status)] = counts.get(str(status), 0) + 1
    return counts


def latency_summary(log) -> dict:
    ok = [seconds for status, seconds, _ in log if status == 200]
    return {f"p{q}_ms": round(1000 * percentile(ok, q), 1)
            for q in (50, 95, 99)} if ok else {}


# ------------------------------------------------------------------ phases
def phase_load(server, args) -> dict:
    log, seconds = asyncio.run(run_clients(
        server.url, requests_of(args.max_requests, seed=3), args.clients,
        args.duration))
    tokens = sum(t for status, _, t in log if status == 200)
    return {"clients": args.clients, "seconds": round(seconds, 1),
            "requests": len(log), "statuses": statuses(log),
            "tokens_per_s": round(tokens / seconds, 1),
            **latency_summary(log)}


def phase_lone(server, args) -> dict:
    log = []

    async def one_at_a_time():
        import httpx

        async with httpx.AsyncClient(timeout=300) as client:
            await _post(client, server.url, [["Warm", "up", "."]], [])
            for request in requests_of(args.lone_requests, seed=11):
                await _post(client, server.url, request, log)

    asyncio.run(one_at_a_time())
    return {"requests": len(log), "statuses": statuses(log),
            "lone_s": [round(s, 4) for _, s, _ in log]}


def phase_overload(server, args) -> dict:
    burst = 2 * args.max_concurrent_requests
    rss_before = server.rss_mib()
    log = []
    deadline = time.perf_counter() + args.overload_s

    async def bursts():
        import httpx

        async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(
                max_connections=burst)) as client:
            seed = 100
            while time.perf_counter() < deadline:
                seed += 1
                await asyncio.gather(*(
                    _post(client, server.url, request, log)
                    for request in requests_of(burst, seed)))

    asyncio.run(bursts())
    counts = statuses(log)
    return {"burst": burst, "requests": len(log), "statuses": counts,
            "only_200_and_429": set(counts) <= {"200", "429"},
            "rss_before_mib": round(rss_before, 1),
            "rss_after_mib": round(server.rss_mib(), 1)}


def phase_rss(server, args) -> dict:
    one = [[s] for s in corpus(args.rss_warmup + args.rss_requests, seed=5)]
    clients = min(16, args.max_concurrent_requests)
    warm, _ = asyncio.run(run_clients(server.url, one[:args.rss_warmup],
                                      clients, 3600))
    before = server.rss_mib()
    log, seconds = asyncio.run(run_clients(
        server.url, one[args.rss_warmup:], clients, 3600))
    after = server.rss_mib()
    return {"warmup_requests": len(warm), "requests": len(log),
            "seconds": round(seconds, 1), "statuses": statuses(log),
            "rss_after_warmup_mib": round(before, 1),
            "rss_after_mib": round(after, 1),
            "rss_growth_pct": round(100 * (after - before) / before, 2)}


def phase_sigterm(server, args) -> dict:
    async def load_then_signal():
        stop = asyncio.Event()
        clients = asyncio.ensure_future(run_clients(
            server.url, requests_of(100000, seed=9), 32, 3600, stop))
        await asyncio.sleep(args.sigterm_after_s)
        server.proc.send_signal(signal.SIGTERM)
        await asyncio.sleep(1.0)
        stop.set()
        return await clients

    (log, _) = asyncio.run(load_then_signal())
    exit_status = server.proc.wait(timeout=120)
    counts = statuses(log)
    # the server's last line: what its routes received and answered
    last = server.stderr_tail().strip().splitlines()[-1]
    received, answered = (int(w) for w in last.split() if w.isdigit())
    # refused or reset before the server read them (the listener closed
    # with connections in the kernel's backlog): never accepted
    not_read = sum(n for status, n in counts.items()
                   if status not in ("200", "503", "429"))
    return {"requests": len(log), "statuses": counts,
            "exit_status": exit_status, "server_received": received,
            "server_answered": answered,
            "client_requests_not_read_by_server": not_read,
            "every_accepted_answered": received == answered}


def progress(phase: str, result: dict) -> None:
    """A phase's result on stderr as it ends (a long run's partial
    figures)."""
    print(f"{common.utc_now()} {phase}: {json.dumps(result)}",
          file=sys.stderr, flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="the tiny model and a few seconds a phase")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--max_requests", type=int, default=100000,
                        help="requests of the load phase at most")
    parser.add_argument("--lone_requests", type=int, default=20)
    parser.add_argument("--bulk_passes", type=int, default=3)
    parser.add_argument("--bulk_sentences", type=int, default=256)
    parser.add_argument("--max_concurrent_requests", type=int, default=64)
    parser.add_argument("--max_wait_ms", type=int, default=5)
    parser.add_argument("--max_batch_tokens", type=int, default=8192)
    parser.add_argument("--overload_s", type=float, default=10.0)
    parser.add_argument("--rss_requests", type=int, default=10000)
    parser.add_argument("--rss_warmup", type=int, default=500)
    parser.add_argument("--sigterm_after_s", type=float, default=3.0)
    common.add_model_workdir_arguments(parser)
    args = parser.parse_args(argv)
    if args._measure:
        print(json.dumps(measure_bulk(args._measure, args)))
        return
    phases = args.phases.split(",")
    unknown = set(phases) - set(PHASES)
    if unknown:
        parser.error(f"--phases: unknown {sorted(unknown)}; expected some "
                     f"of {','.join(PHASES)}")
    report = {"machine": common.machine(), "quick": args.quick,
              "uptime_before": os.popen("uptime").read().strip()}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or tmp
        common.write_bench_model(workdir, args.quick)

        def bulk():
            child = [os.path.abspath(__file__), "--_measure", workdir,
                     "--bulk_passes", str(args.bulk_passes),
                     "--bulk_sentences", str(args.bulk_sentences),
                     "--lone_requests", str(args.lone_requests)]
            return common.run_json_child(
                child + (["--quick"] if args.quick else []),
                common.checkout_child_env())

        server = Server(workdir, args)
        try:
            runs = []
            if "bulk" in phases:
                runs.append(bulk())
                progress("bulk", runs[-1])
            for phase in ("lone", "load"):
                if phase in phases:
                    report[phase] = globals()[f"phase_{phase}"](server, args)
                    progress(phase, report[phase])
            if "bulk" in phases and "load" in phases:
                runs.append(bulk())
            if runs:
                report["bulk"] = {
                    "tokens_per_s": [round(r["tokens_per_s"], 1)
                                     for r in runs],
                    "lone_direct_s_median": round(statistics.median(
                        s for r in runs for s in r["lone_s"]), 4)}
            for phase in ("overload", "rss", "sigterm"):
                if phase in phases:
                    report[phase] = globals()[f"phase_{phase}"](server, args)
                    progress(phase, report[phase])
            if "sigterm" not in phases:
                report["exit_status"] = server.stop()
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
        report["server_log_tail"] = server.stderr_tail()[-300:]
    if "bulk" in report and "load" in report:
        report["load"]["server_over_bulk"] = round(
            report["load"]["tokens_per_s"]
            / statistics.mean(report["bulk"]["tokens_per_s"]), 3)
    if "bulk" in report and "lone" in report:
        lone = statistics.median(report["lone"]["lone_s"])
        report["lone"]["median_s"] = round(lone, 4)
        report["lone"]["over_direct"] = round(
            lone / report["bulk"]["lone_direct_s_median"], 3)
    report["uptime_after"] = os.popen("uptime").read().strip()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
