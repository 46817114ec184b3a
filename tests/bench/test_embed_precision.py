"""``bench/embed_precision.py --quick`` runs end to end (no speed
asserted): both precisions embed the corpus through the real loader, and
one JSON line reports the rates, the CPU flags and the distances."""

import json
import os
import subprocess
import sys

from helpers import REPO_ROOT


def test_quick_bench_reports_one_json_line(tmp_path):
    env = dict(os.environ, KERAS_BACKEND="tensorflow",
               TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "embed_precision.py"),
         "--quick", "--state_variants", "--n_sentences", "12",
         "--workdir", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert set(report["tokens_per_s"]) == {"float32", "bfloat16"}
    assert all(rate > 0 for rate in report["tokens_per_s"].values())
    assert isinstance(report["cpu_flags"], list)
    for part in ("layer_0", "layer_1", "layer_2", "average"):
        assert 0.99 < report["distance_to_float32"][part]["cosine_min"] <= 1
    assert report["state_variants"]["tokens"]["long"] > 100
