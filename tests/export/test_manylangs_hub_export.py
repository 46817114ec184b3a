"""export-hub for a converted ELMoForManyLangs model: the fixture's
``tiny.model`` converted as it is, exported, and its signatures against
upstream's own embeddings (``reference.hdf5``, one batch from zero
states; layer 0 = ``[e ; e]``, so ``word_emb`` is ``e``).

The exactness check runs the SavedModel in a fresh process (``hub.load``,
``ELMoHubLayer``, ``hub.KerasLayer``); the quick tier checks the module in
process, before saving.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import cli
from bilm_keras.export.saved_model_export import (
    ELMoHubModule,
    build_backbone,
    graph_ids_for_options,
)
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.bilm_tf_hdf5 import load_bilm_tf_hdf5
from helpers import REPO_ROOT, user_env

CONSUMER = REPO_ROOT / "tests" / "export" / "manylangs_hub_consumer.py"
P = 16  # the fixture's projection_dim
MC = 20


@pytest.fixture(scope="module")
def converted(manylangs_converted):
    return manylangs_converted


@pytest.fixture(scope="module")
def fixture_data(manylangs_reference):
    r = manylangs_reference
    return r["sentences"], r["all"], r["ids"]


def _padded(sentences):
    width = max(map(len, sentences))
    return ([s + [""] * (width - len(s)) for s in sentences],
            [len(s) for s in sentences])


def _no_space(sentences):
    return [i for i, s in enumerate(sentences)
            if not any(c.isspace() for t in s for c in t)]


def _check_outputs(out, layers, rows, label, keys=("word_emb",
                                                   "lstm_outputs1",
                                                   "lstm_outputs2")):
    """``out[key][r]`` against upstream's layers of sentence ``rows[r]``."""
    for key in keys:
        got = np.asarray(out[key])
        for r, i in enumerate(rows):
            n = len(layers[i][0])
            want = (layers[i][0][:, :P] if key == "word_emb"
                    else layers[i][int(key[-1])])
            np.testing.assert_allclose(
                got[r, :n], want, atol=1e-5,
                err_msg=f"{label}: {key} of sentence {i}")
            assert not got[r, n:].any(), f"{label}: {key} past the end"


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_module_tokens_signature_equals_upstream(converted, fixture_data):
    """In process, unsaved: the in-graph ids + the ``tokens`` function."""
    sentences, layers, _ = fixture_data
    options = BiLMOptions.from_json(converted["options_file"])
    backbone = build_backbone(options, trainable_lm=False)
    load_bilm_tf_hdf5(backbone, converted["weight_file"])
    module = ELMoHubModule(backbone, converted["options_file"],
                           graph_ids=graph_ids_for_options(options))
    assert module.ids_width == MC + 1
    tokens, lengths = _padded(sentences)
    out = module.tokens(tf.constant(tokens), tf.constant(lengths, tf.int32))
    _check_outputs(out, layers, range(len(sentences)), "tokens")
    assert out["sequence_len"].numpy().tolist() == lengths


def _consume(mode, cfg, tmp_path, env=None):
    cfg_file = tmp_path / f"{mode}.json"
    out_file = tmp_path / f"{mode}.npz"
    cfg_file.write_text(json.dumps(cfg, ensure_ascii=False), "utf-8")
    # a fresh interpreter, not helpers.python_argv: the SavedModel loads
    # without bilm_keras imported
    proc = subprocess.run(
        [sys.executable, str(CONSUMER), mode, str(cfg_file), str(out_file)],
        capture_output=True, text=True, timeout=300,
        env={**user_env(), "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("REPORT ")]
    assert line, proc.stdout[-2000:] + proc.stderr[-2000:]
    with np.load(out_file) as arrays:
        return json.loads(line[-1][len("REPORT "):]), dict(arrays)


def consumer_config(savedmodel, sentences, ids):
    """The inputs of every signature: ``tokens`` all sentences (tokens
    with spaces included), ``default`` those without whitespace, ``elmo``
    upstream's ids + 1."""
    tokens, lengths = _padded(sentences)
    kept = _no_space(sentences)
    width = max(map(len, ids))
    padded_ids = [np.pad(r + 1, [(0, width - len(r)), (0, 0)]).tolist()
                  for r in ids]
    return dict(dir=str(savedmodel), padded_tokens=tokens,
                sequence_len=lengths,
                strings=[" ".join(sentences[i]) for i in kept],
                ids=padded_ids), kept


@pytest.mark.nightly
@pytest.mark.slow
def test_savedmodel_in_a_fresh_process_equals_upstream(converted,
                                                       fixture_data,
                                                       tmp_path):
    sentences, layers, ids = fixture_data
    savedmodel = cli.run([
        "export-hub", "--options_file", converted["options_file"],
        "--weight_file", converted["weight_file"],
        "--outdir", str(tmp_path / "sm")])
    cfg, kept = consumer_config(savedmodel, sentences, ids)
    assert len(kept) == 13  # "New York" and "你好\u3000世界" need `tokens`
    report, out = _consume("hub_load", cfg, tmp_path)
    everything = range(len(sentences))
    for name, rows in (("tokens", everything), ("elmo", everything),
                       ("default", kept), ("call", kept), ("keras3", kept)):
        _check_outputs({k.split("/")[1]: v for k, v in out.items()
                        if k.startswith(name + "/")}, layers, rows, name)
    assert report["elmo_width"] == MC + 1
    assert report["assets"] == ["char.dic", "options.json", "word.dic"]
    assert "word ids (column 20) < 79" in report["elmo_out_of_range"]

    report, out = _consume("tf_keras", cfg, tmp_path,
                           env={"TF_USE_LEGACY_KERAS": "1"})
    _check_outputs({k.split("/")[1]: v for k, v in out.items()
                    if k.startswith("tf_keras/")}, layers, everything,
                   "hub.KerasLayer")
    np.testing.assert_allclose(out["tf_keras/call_default"],
                               np.load(tmp_path / "hub_load.npz")[
                                   "call/default"], atol=1e-6)
