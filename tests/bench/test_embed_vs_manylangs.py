"""``bench/embed_vs_manylangs.py`` needs a checkout of upstream's code,
which is not part of this repository: without one it refuses in one line
before writing anything. (Its ``--quick`` run, given a checkout, is a
smoke check of the script: ``--manylangs_dir``, bench/README.md.)"""

import subprocess
import sys

from helpers import REPO_ROOT

SCRIPT = REPO_ROOT / "bench" / "embed_vs_manylangs.py"


def test_refuses_without_upstreams_code(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--manylangs_dir", str(tmp_path),
         "--workdir", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1].endswith(
        "--manylangs_dir: expected a checkout of HIT-SCIR/ELMoForManyLangs "
        f"(with elmoformanylangs/elmo.py), found {str(tmp_path)!r}")
    assert not (tmp_path / "work").exists()
