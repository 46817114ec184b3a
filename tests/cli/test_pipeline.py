"""The README's main command, in a small size: vocabulary -> train ->
heldout perplexity -> HDF5 -> embeddings, on the stdlib corpus, tested on
a Chinese heldout file (the demo embeds the user's own heldout text)."""

import re
import subprocess

import h5py
import numpy as np
import pytest

from helpers import REPO_ROOT, python_argv, user_env


@pytest.mark.nightly  # each step is a command tested on its own, and
# tests/test_wheel_install.py runs `pipeline` from the installed wheel
def test_run_pipeline_end_to_end(tmp_path):
    out = tmp_path / "run"
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("\n深度 学习 模型 。\n我们 训练 语言 模型 。\n更多\n",
                       encoding="utf-8")
    # this checkout's package, not the installed one
    env = dict(user_env(), TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        python_argv(env) + ["bin/run_pipeline.py", "--out_dir", str(out),
         "--max_sentences", "400", "--n_epochs", "1",
         "--heldout", str(heldout)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    text = result.stdout
    # the training run sized TensorFlow's CPU pools (no GPU in the tests)
    assert re.search(r"TensorFlow CPU threads: \d+ per op, 2 ops at a "
                     r"time", text)
    mean = float(re.search(r"mean perplexity: ([\d.]+)", text).group(1))
    n_tokens_vocab = int(re.search(r"vocabulary: (\d+) tokens", text).group(1))
    # trained for one epoch: better than uniform, and finite
    assert 1.0 < mean < n_tokens_vocab
    # the demo embeds the first two heldout sentences, not fixed English
    assert re.search(r"ELMo layers \(3, 4, \d+\) for: 深度 学习 模型 。\n"
                     r"ELMo layers \(3, 5, \d+\) for: 我们 训练 语言 模型 。",
                     text)
    assert "return the value" not in text
    with h5py.File(out / "model" / "lm_weights.hdf5", "r") as f:
        assert f["char_embed"].shape[0] == 261
        assert "softmax" not in f
        assert np.isfinite(f["CNN_proj/W_proj"][...]).all()
    assert (out / "model" / "options.json").exists()
