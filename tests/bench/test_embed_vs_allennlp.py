"""``bench/embed_vs_allennlp.py`` runs AllenNLP in a venv of its own
(its docstring says how to make it), which is not part of this
repository: without it the script refuses in one line before it writes a
model. (Its ``--quick`` run, given the venv, is the smoke check of the
script: ``--allennlp_python``, bench/README.md.)"""

import subprocess
import sys

from helpers import REPO_ROOT

SCRIPT = REPO_ROOT / "bench" / "embed_vs_allennlp.py"


def test_refuses_without_allennlps_venv(tmp_path):
    python = tmp_path / "anlp-venv" / "bin" / "python"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--allennlp_python", str(python),
         "--quick"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        f"embed_vs_allennlp.py: error: --allennlp_python: {python} does not "
        "exist (make the venv as this script's docstring says)")
    assert proc.stdout == ""
    assert list(tmp_path.iterdir()) == []
