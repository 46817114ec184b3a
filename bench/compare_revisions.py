"""The same benchmark at two git revisions, runs alternating: median ratios.

A refactor must keep every path's speed. Timing the old code one day and
the new code another compares two machine loads, not two programs. This
script exports ``--base`` (a commit) with ``git archive`` into a temporary
folder, then runs one benchmark command alternately in that tree and in the
working tree (base, head, head, base, ...), each run a fresh process with
its own tree first on ``PYTHONPATH``, so that the load of the moment hits
both alike. Each run prints one JSON line (every script in ``bench/`` does);
the result is, for every numeric key, the median at each revision and the
median of the per-round ratios head / base (each round's ratio listed
too).

Usage::

    python bench/compare_revisions.py --base 54ea15e --rounds 3 -- \\
        bench/train_throughput.py --passes 3
    python bench/compare_revisions.py --base main~5 -- \\
        bench/embed_throughput.py --passes 2

The command after ``--`` is a script path relative to the repository root
plus its arguments; each revision runs its own copy of the script (an
absolute path runs the same script in both trees). Keys whose value is the
same in every run (the configuration) are left out. Prints one JSON line.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def export_revision(revision: str, folder: pathlib.Path) -> str:
    """Writes ``revision``'s tracked files into ``folder``; returns the
    full commit id."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"],
        cwd=REPO_ROOT, check=True, capture_output=True, text=True,
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "archive", commit], cwd=REPO_ROOT, check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive,
                   check=True)
    return commit


def run_once(tree: pathlib.Path, command: list) -> dict:
    """Runs ``command`` (script + args) in ``tree``; its last JSON line."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tree)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                       if p])
    done = subprocess.run([sys.executable] + command, cwd=tree, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(
            f"compare_revisions: {' '.join(command)} failed in {tree} "
            f"(exit {done.returncode}):\n{done.stderr[-3000:]}")
    for line in reversed(done.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit(f"compare_revisions: {' '.join(command)} printed no "
                     f"JSON line in {tree}:\n{done.stdout[-2000:]}")


def numeric_items(result: dict, prefix: str = ""):
    """``(dotted key, value)`` for every number in a nested result."""
    for key, value in result.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from numeric_items(value, f"{name}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield name, float(value)


def summarize(base_runs: list, head_runs: list) -> dict:
    """Per numeric key: medians at each revision and the median ratio."""
    summary = {}
    keys = dict(numeric_items(base_runs[0]))
    for key in keys:
        base = [dict(numeric_items(r)).get(key) for r in base_runs]
        head = [dict(numeric_items(r)).get(key) for r in head_runs]
        if None in base or None in head or len(set(base + head)) == 1:
            continue
        ratios = [h / b for b, h in zip(base, head) if b]
        summary[key] = {
            "base": statistics.median(base),
            "head": statistics.median(head),
            "ratio_head_over_base": (round(statistics.median(ratios), 4)
                                     if ratios else None),
            "round_ratios": [round(r, 4) for r in ratios],
        }
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        usage="%(prog)s --base REV [--rounds N] -- SCRIPT [ARGS...]")
    parser.add_argument("--base", required=True,
                        help="the commit to compare against")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs per revision (alternating)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the benchmark command after --")
    if not (REPO_ROOT / command[0]).exists():  # an absolute path too
        parser.error(f"{command[0]}: no such script in {REPO_ROOT}")
    with tempfile.TemporaryDirectory(prefix="bench-base-") as tmp:
        base_tree = pathlib.Path(tmp)
        commit = export_revision(args.base, base_tree)
        runs = {"base": [], "head": []}
        for i in range(args.rounds):
            order = ("base", "head") if i % 2 == 0 else ("head", "base")
            for which in order:
                tree = base_tree if which == "base" else REPO_ROOT
                runs[which].append(run_once(tree, command))
                print(f"round {i + 1}/{args.rounds} {which} done",
                      file=sys.stderr, flush=True)
    print(json.dumps({
        "command": command, "base": commit, "rounds": args.rounds,
        "summary": summarize(runs["base"], runs["head"]),
    }))


if __name__ == "__main__":
    main()
