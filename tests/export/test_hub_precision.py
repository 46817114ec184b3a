"""``bilm-keras export-hub --precision bfloat16``: a SavedModel whose
signatures take and return float32, loaded with ``hub.load`` in a fresh
process, gives vectors within the bounds of the float32 export's
(``tests/helpers.py`` ``assert_near_float32``)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from bilm_keras import cli
from helpers import assert_near_float32, load_reference_embeddings, user_env

# an export and hub.load in a fresh process (about 30 s on the AVX2 EPYC):
# nightly; the other tiers check the precision's bounds in
# tests/layers/test_precision.py and the float32 export in
# tests/export/test_saved_model_export.py
pytestmark = pytest.mark.nightly

#: a fresh process: hub.load both exports, run "default" and "tokens",
#: save every output with its dtype
CONSUMER = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
cfg = json.load(open(sys.argv[1]))
out = {}
for name, folder in cfg["dirs"].items():
    module = hub.load(folder)
    default = module.signatures["default"](tf.constant(cfg["sentences"]))
    tokens = module.signatures["tokens"](
        tokens=tf.constant(cfg["tokens"]),
        sequence_len=tf.constant(cfg["lengths"], tf.int32))
    for signature, outputs in (("default", default), ("tokens", tokens)):
        for key, value in outputs.items():
            out[f"{name}/{signature}/{key}"] = value.numpy()
np.savez(sys.argv[2], **out)
print("DTYPES " + json.dumps({k: str(v.dtype) for k, v in out.items()}))
"""


@pytest.fixture(scope="module")
def loaded(model_dir, tmp_path_factory, fixture_export):
    root = tmp_path_factory.mktemp("hub_precision")
    # float32 is the session's shared export of the same model (float32 is
    # export_hub's default; its vocabulary asset changes no number), read
    # only: one export fewer. bfloat16 through the command, as users run it
    dirs = {"float32": fixture_export, "bfloat16": str(root / "bfloat16")}
    assert cli.main([
        "export-hub", "--options_file", str(model_dir / "options.json"),
        "--weight_file", str(model_dir / "lm_weights.hdf5"),
        "--outdir", dirs["bfloat16"], "--precision", "bfloat16"]) == 0
    sentences = [" ".join(s) for batch in
                 load_reference_embeddings(model_dir)[0] for s in batch][:8]
    tokens = [s.split() for s in sentences]
    width = max(map(len, tokens))
    cfg = dict(dirs=dirs, sentences=sentences,
               tokens=[t + [""] * (width - len(t)) for t in tokens],
               lengths=[len(t) for t in tokens])
    (root / "cfg.json").write_text(json.dumps(cfg))
    # a fresh interpreter, not helpers.python_argv: the SavedModels load
    # without bilm_keras imported
    proc = subprocess.run(
        [sys.executable, "-c", CONSUMER, str(root / "cfg.json"),
         str(root / "out.npz")], capture_output=True, text=True,
        timeout=300, env={**user_env(), "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("DTYPES ")]
    with np.load(root / "out.npz") as arrays:
        return (json.loads(line[-1][len("DTYPES "):]), dict(arrays),
                cfg["lengths"])


def test_signatures_return_float32(loaded):
    dtypes, _, _ = loaded
    assert dtypes["bfloat16/default/elmo"] == "float32"
    floats = {k: v for k, v in dtypes.items() if "sequence_len" not in k}
    assert set(floats.values()) == {"float32"}


@pytest.mark.parametrize("signature", ["default", "tokens"])
@pytest.mark.parametrize("key", ["word_emb", "lstm_outputs1",
                                 "lstm_outputs2", "elmo"])
def test_bfloat16_export_near_float32_export(loaded, signature, key):
    _, arrays, lengths = loaded
    want = arrays[f"float32/{signature}/{key}"]
    got = arrays[f"bfloat16/{signature}/{key}"]
    # each sentence's real tokens (the padding is zero in both)
    assert_near_float32([w[:n] for w, n in zip(want, lengths)],
                        [g[:n] for g, n in zip(got, lengths)], key)
    assert np.abs(got - want).max() > 1e-6  # bfloat16 did run
