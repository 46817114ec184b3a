"""What the benchmark scripts share about the processes they start: a
child that prints one JSON line, and the CPU it runs on.

Standard library only: a script runs its own file in another venv too
(``embed_vs_allennlp.py`` in AllenNLP's), and that child imports this.
"""

import json
import os
import subprocess
import sys


def run_json_child(argv, env=None, python=sys.executable):
    """Runs ``python argv...`` (``argv[0]`` a script) with this process's
    environment updated by ``env``; returns its last line of output as
    JSON, or None when it printed nothing.

    Raises:
        RuntimeError: the child failed; the message ends with the last
            4,000 characters of its standard error.
    """
    proc = subprocess.run([python] + list(argv), capture_output=True,
                          text=True, env=dict(os.environ, **(env or {})))
    if proc.returncode != 0:
        name = " ".join([os.path.basename(python)] + list(argv[:2]))
        raise RuntimeError(f"{name} failed:\n{proc.stderr[-4000:]}")
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None


def cpu_model() -> str:
    """The ``model name`` of ``/proc/cpuinfo`` (``"unknown"`` without
    one)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"
