"""The fuzzing campaign: every target under atheris, with the count of
inputs tried, the coverage the seeds reach and what the run added, and
what broke a property.

::

    nice -n 10 python fuzz/campaign.py --runs 10000 --seconds 600
    nice -n 10 python fuzz/campaign.py --targets options archive

Each target runs in its own libFuzzer process (``fuzz/run_target.py``)
from its seeds and kept corpus, for ``--runs`` inputs or ``--seconds``,
whichever ends first; libFuzzer's ``-timeout`` bounds each input. Then
the inputs it saved for new coverage are kept in ``fuzz/corpus/TARGET/``
(smallest first, under ``--keep-bytes``), which ``fuzz/replay.py`` and
the suite replay. A
finding is written to ``fuzz/findings/`` and named in the report.
Results go to ``fuzz/results.json`` (one entry per target, with the
date and the CPU) and a table on stdout.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from fuzz.harness import scratch_root  # noqa: E402
from fuzz.replay import child_env  # noqa: E402
from fuzz.targets import CORPUS, TARGETS  # noqa: E402

RESULTS = os.path.join(HERE, "results.json")
FINDINGS = os.path.join(HERE, "findings")

#: libFuzzer's status lines: "#1234 INITED cov: 56 ft: 78 corp: ..."
_STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+)")


def cpu_name() -> str:
    with open("/proc/cpuinfo") as f:
        text = f.read()
    model = re.search(r"model name\s*:\s*(.+)", text)
    return (f"{model.group(1).strip() if model else platform.processor()}, "
            f"{os.cpu_count()} vCPUs")


def _status(output: str) -> dict:
    found = {}
    for line in output.splitlines():
        m = _STATUS.match(line)
        if m:
            runs, kind, cov, ft = m.groups()
            found.setdefault(kind, (int(runs), int(cov), int(ft)))
            found["last"] = (int(runs), int(cov), int(ft))
    return found


def _finding(output: str, code: int) -> str:
    for line in output.splitlines():
        if line.startswith(("PropertyBroken:", "==")) and (
                "PropertyBroken" in line or "deadly signal" in line
                or "timeout" in line or "out-of-memory" in line):
            return line.strip()
    lines = [line for line in output.splitlines() if line.strip()]
    return f"the run ended with code {code}: {lines[-1] if lines else ''}"


def run_target(name: str, runs: int, seconds: int, keep_bytes: int) -> dict:
    target = TARGETS[name]
    work = tempfile.mkdtemp(prefix=f"bilm_keras_campaign_{name}_",
                            dir=scratch_root())
    seeds, fresh = os.path.join(work, "seeds"), os.path.join(work, "new")
    os.makedirs(seeds)
    os.makedirs(fresh)
    for data in target.seeds():
        digest = hashlib.sha1(data).hexdigest()
        with open(os.path.join(seeds, digest), "wb") as f:
            f.write(data)
    kept = os.path.join(CORPUS, name)
    os.makedirs(kept, exist_ok=True)
    os.makedirs(FINDINGS, exist_ok=True)
    cmd = [sys.executable, "-m", "fuzz.run_target", name,
           f"--workspace={os.path.join(work, 'workspace')}", fresh, seeds,
           kept, f"-runs={runs}", f"-max_total_time={seconds}",
           f"-timeout={int(target.seconds)}", "-max_len=1048576",
           "-rss_limit_mb=0", "-print_final_stats=1", "-use_value_profile=1",
           f"-artifact_prefix={FINDINGS}/{name}-"]
    started = time.time()
    done = subprocess.run(cmd, cwd=REPO, env=child_env(),
                          capture_output=True, text=True)
    elapsed = time.time() - started
    output = done.stdout + done.stderr
    status = _status(output)
    inited = status.get("INITED", (0, 0, 0))
    last = status.get("last", inited)
    artifacts = sorted(f for f in os.listdir(FINDINGS)
                       if f.startswith(name + "-"))
    merged = _merge(name, fresh, seeds, kept, keep_bytes)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "target": name,
        "reader": target.reader,
        "inputs": last[0],
        "seconds": round(elapsed, 1),
        "inputs_per_second": round(last[0] / max(elapsed, 1e-9), 1),
        "coverage_after_seeds": inited[1],
        "coverage_at_end": last[1],
        "new_coverage": last[1] - inited[1],
        "new_features": last[2] - inited[2],
        "finding": (_finding(output, done.returncode) if done.returncode
                    else ""),
        "artifacts": artifacts,
        "corpus_kept": merged,
    }


def _merge(name, fresh, seeds, kept, keep_bytes) -> int:
    """Keeps the run's new inputs (those libFuzzer saved for new coverage,
    each reduced as it went) in ``fuzz/corpus/TARGET/``, smallest first,
    until ``keep_bytes``; returns how many the folder holds."""
    seed_names = set(os.listdir(seeds))
    new = sorted((os.path.getsize(os.path.join(fresh, f)), f)
                 for f in os.listdir(fresh)
                 if f not in seed_names
                 and not os.path.exists(os.path.join(kept, f)))
    used = sum(os.path.getsize(os.path.join(kept, f))
               for f in os.listdir(kept))
    for size, f in new:
        if used + size > keep_bytes:
            break
        shutil.copy(os.path.join(fresh, f), os.path.join(kept, f))
        used += size
    return len(os.listdir(kept))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="*", default=sorted(TARGETS))
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--seconds", type=int, default=600)
    parser.add_argument("--keep-bytes", type=int, default=256 << 10,
                        help="bytes of new corpus kept per target")
    parser.add_argument("--results", default=RESULTS,
                        help="the JSON file the rows are added to")
    args = parser.parse_args(argv)
    for name in args.targets:
        row = run_target(name, args.runs, args.seconds, args.keep_bytes)
        row["date"] = datetime.date.today().isoformat()
        row["machine"] = cpu_name()
        # read again: another campaign may run other targets meanwhile
        results = {}
        if os.path.exists(args.results):
            with open(args.results) as f:
                results = json.load(f)
        results[name] = row
        with open(args.results, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{name:18} {row['inputs']:>8} inputs {row['seconds']:>7} s "
              f"cov {row['coverage_after_seeds']} -> "
              f"{row['coverage_at_end']} "
              f"{row['finding'] or 'no finding'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
