"""tf.distribute: MirroredStrategy on 2 logical CPUs, two workers under
MultiWorkerMirroredStrategy, and SIGKILL + restart.py."""

import json
import os
import pathlib
import signal
import subprocess
import time

import numpy as np
import pytest
import tensorflow as tf
from helpers import REPO_ROOT, fixture_options, python_argv
from local_cluster import local_cluster

HERE = pathlib.Path(__file__).resolve().parent
WORKER = str(HERE / "distributed_worker.py")


def _env(**extra):
    env = dict(os.environ, KERAS_BACKEND="tensorflow",
               TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


@pytest.mark.slow
def test_mirrored_step_matches_single_device(train_dir, tmp_path):
    out = tmp_path / "mirrored.json"
    subprocess.run(python_argv(_env()) + [WORKER, "mirrored",
                                          str(train_dir), str(out)],
                   env=_env(), check=True, timeout=240)
    result = json.loads(out.read_text())
    assert result["divisible_error"] == (
        "--batch_size: expected a multiple of the 2 replicas, found 3")
    single, mirrored = result["n_variables"]
    assert single == mirrored
    assert result["copies"] == [2]
    np.testing.assert_allclose(*result["losses"], rtol=1e-5)
    assert result["max_abs_diff"] < 1e-5


@pytest.mark.nightly  # two worker processes
@pytest.mark.slow
def test_two_workers_end_with_identical_weights(train_dir, tmp_path):
    commands = [python_argv(_env()) + [
                    WORKER, "multi_worker", str(train_dir),
                    str(tmp_path / "ckpt"), str(tmp_path / f"w{index}.npz")]
                for index in range(2)]
    with local_cluster(commands, _env(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT) as procs:
        outputs = [p.communicate(timeout=240)[0] for p in procs]
    for p, output in zip(procs, outputs):
        assert p.returncode == 0, output[-3000:]
    w0, w1 = (np.load(tmp_path / f"w{i}.npz") for i in range(2))
    assert int(w0["step"]) == int(w1["step"]) == 134 // 20
    assert sorted(w0.files) == sorted(w1.files)
    for name in w0.files:
        np.testing.assert_array_equal(w0[name], w1[name], err_msg=name)
    # only the chief wrote a checkpoint
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpt")).endswith(
        "model-6")


@pytest.mark.nightly  # a cluster's preemption
@pytest.mark.slow
def test_sigkill_then_restart_continues(train_dir, tmp_path):
    save_dir = tmp_path / "ckpt"
    options = tmp_path / "options.json"
    fixture_options(n_epochs=400).to_json(options)  # 2400 steps: killed
    common = ["--train_prefix", str(train_dir / "data.txt"),
              "--vocab_file", str(train_dir / "vocab.txt"),
              "--save_dir", str(save_dir)]
    proc = subprocess.Popen(
        python_argv(_env()) + [
            str(REPO_ROOT / "bin" / "train_elmo.py"), *common,
            "--options", str(options), "--save_every", "20", "--log_every",
            "1000", "--seed", "0"],
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            ckpt = tf.train.latest_checkpoint(str(save_dir))
            if ckpt and int(ckpt.rsplit("-", 1)[1]) >= 40:
                break
            time.sleep(0.2)
        else:
            pytest.fail("no checkpoint within 120 s")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    last = tf.train.latest_checkpoint(str(save_dir))
    last_step = int(last.rsplit("-", 1)[1])
    assert last_step % 20 == 0 and last_step >= 40
    # the state file points at a complete checkpoint
    assert tf.train.load_checkpoint(last).has_tensor(
        "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")
    # continue for one more epoch (6 steps) on the same data
    done = subprocess.run(
        python_argv(_env()) + [
            str(REPO_ROOT / "bin" / "restart.py"), *common,
            "--n_epochs", "1", "--log_every", "1"],
        env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"at step {last_step}" in done.stdout
    assert f"step {last_step + 6}/{last_step + 6}" in done.stdout
    assert tf.train.latest_checkpoint(str(save_dir)).endswith(
        f"model-{last_step + 6}")
