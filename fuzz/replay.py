"""Replays each target's seeds, kept corpus and regression inputs in a
child process, checking every property of :mod:`fuzz.harness`.

::

    python -m fuzz.replay                  # every target
    python -m fuzz.replay options archive  # some

A child that dies (a segfault, an abort, a hang past the target's time)
is a finding for the input it was running; the replay goes on with the
next input in a new child. Prints one line per finding and exits 1 if
there is any.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import List, Sequence, Tuple

from fuzz.harness import scratch_root
from fuzz.targets import CORPUS, REGRESSIONS, TARGETS, target

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def inputs(name: str, *, seeds: bool = True) -> List[Tuple[str, bytes]]:
    """``(label, bytes)`` of a target's inputs: its seeds, its kept corpus
    and its regression inputs, in that order."""
    found = []
    if seeds:
        found += [(f"seed {i}", data) for i, data in enumerate(
            target(name).seeds())]
    for kind, root in (("corpus", CORPUS), ("regression", REGRESSIONS)):
        folder = os.path.join(root, name)
        if os.path.isdir(folder):
            for entry in sorted(os.listdir(folder)):
                with open(os.path.join(folder, entry), "rb") as f:
                    found.append((f"{kind} {name}/{entry}", f.read()))
    return found


def child_env() -> dict:
    env = dict(os.environ)
    env.update(TF_CPP_MIN_LOG_LEVEL="3", MALLOC_ARENA_MAX="2",
               CUDA_VISIBLE_DEVICES="", PYTHONPATH=REPO + os.pathsep
               + env.get("PYTHONPATH", ""))
    return env


def _child(names: Sequence[str], start: int, work: str) -> int:
    from fuzz.harness import Workspace, check, run_quietly, warm_up

    run_quietly()
    workspace = Workspace(work)
    index = 0
    for name in names:
        chosen = target(name)
        warm_up(chosen, workspace)
        for label, data in inputs(name):
            if index >= start:
                print(f"RUN {index} {name} {label}", flush=True)
                finding = check(chosen, data, workspace)
                if finding is not None:
                    print(f"FINDING {name} {label}: {finding}", flush=True)
            index += 1
    print("DONE", flush=True)
    return 0


def replay(names: Sequence[str], timeout: float = 600.0) -> List[str]:
    """The findings of replaying ``names``' inputs (empty: all hold)."""
    with tempfile.TemporaryDirectory(prefix="bilm_keras_replay_",
                                     dir=scratch_root()) as work:
        return _replay(names, timeout, work)


def _replay(names: Sequence[str], timeout: float, work: str) -> List[str]:
    findings, start = [], 0
    while True:
        cmd = [sys.executable, "-m", "fuzz.replay", "--child",
               ",".join(names), str(start), work]
        try:
            done = subprocess.run(cmd, cwd=REPO, env=child_env(),
                                  capture_output=True, text=True,
                                  timeout=timeout)
            out, code = done.stdout, done.returncode
        except subprocess.TimeoutExpired as e:
            out, code = (e.stdout or b"").decode(), "a hang"
        lines = out.splitlines()
        findings += [line[len("FINDING "):] for line in lines
                     if line.startswith("FINDING ")]
        if "DONE" in lines:
            return findings
        runs = [line for line in lines if line.startswith("RUN ")]
        if not runs:
            return findings + [f"the replay child failed ({code})"]
        _, index, name, label = runs[-1].split(" ", 3)
        findings.append(f"{name} {label}: the process died ({code})")
        start = int(index) + 1


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child(argv[1].split(","), int(argv[2]), argv[3])
    names = argv or sorted(TARGETS)
    findings = replay(names)
    for line in findings:
        print(line)
    print(f"{len(findings)} finding(s) in {', '.join(names)}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
