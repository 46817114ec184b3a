"""Several devices: the compute batches spread over logical CPU devices
give output identical to the one-device path (a subprocess: logical
devices must be set before TensorFlow initializes)."""

import json
import subprocess

import pytest
from helpers import REPO_ROOT, python_argv, user_env

SCRIPT = r"""
import json, sys
import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
import h5py
from bilm_keras import BidirectionalLanguageModel, cli
from bilm_keras.embedding.bulk_embedder import BulkEmbedder

model, data, out = sys.argv[1:4]
bilm = BidirectionalLanguageModel(f"{model}/options.json",
                                  f"{model}/lm_weights.hdf5")
lines = open(data, encoding="utf-8").read().splitlines()
sentences = [line.split() for line in lines]
one = BulkEmbedder(bilm.backbone).embed_sentences(sentences, batch_size=2)
report = {}
for devices in (["CPU:0", "CPU:1"], ["cpu:2", "CPU:0", "CPU:1"]):
    embedder = BulkEmbedder(bilm.backbone, devices=devices)
    got = embedder.embed_sentences(sentences, batch_size=2)
    report[",".join(devices)] = dict(
        n_replicas=embedder.n_replicas,
        identical=all(np.array_equal(a, b) for a, b in zip(got, one)))
try:
    BulkEmbedder(bilm.backbone, devices=["GPU:7"])
except ValueError as e:
    report["bad"] = str(e)
common = ["embed", "--options_file", f"{model}/options.json",
          "--weight_file", f"{model}/lm_weights.hdf5", "--dataset_file",
          data, "--batch_size", "2", "--chunk_size", "5"]
cli.run(common + ["--outfile", out + "-1.hdf5"])
cli.run(common + ["--outfile", out + "-3.hdf5", "--devices",
                  "CPU:0,CPU:1,CPU:2"])
with h5py.File(out + "-1.hdf5") as a, h5py.File(out + "-3.hdf5") as b:
    report["cli_identical"] = sorted(a) == sorted(b) and all(
        np.array_equal(a[k][...], b[k][...]) for k in a)
print(json.dumps(report))
"""

LINES = ["The cat sat on the mat .", "", "深度 学习", "a", "b c d e f g",
         "x y", "z", "one two three", "end .", "a b", "c"]


@pytest.mark.nightly
@pytest.mark.slow  # a subprocess building three strategies: ~12 s
def test_logical_cpu_devices_give_identical_output(model_dir, tmp_path):
    data = tmp_path / "sentences.txt"
    data.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    # a child of the command server, which started no TensorFlow runtime:
    # the logical devices are set before it starts, as in a fresh process
    env = dict(user_env(), TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(
        python_argv(env) + ["-c", SCRIPT, str(model_dir), str(data),
         str(tmp_path / "out")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # 6 batches of 2: three full pairs; over 3 devices, two full groups
    assert report["CPU:0,CPU:1"] == dict(n_replicas=2, identical=True)
    assert report["cpu:2,CPU:0,CPU:1"] == dict(n_replicas=3, identical=True)
    assert report["bad"].startswith("devices: expected some of CPU:0, "
                                    "CPU:1, CPU:2, found 'GPU:7'")
    assert report["cli_identical"] is True


