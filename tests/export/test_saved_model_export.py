"""The TF-Hub-style export, checked by consumers in fresh processes.

The fixture model is exported once per module; ``hub_consumers.py`` loads
it with ``hub.load``, Keras 3 and tf_keras 2 in subprocesses, and the
numbers are compared here with :class:`BidirectionalLanguageModel` on the
same weights (and, for the first fixture batch, with bilm-tf's own
reference embeddings).

The exports and their consumers are slow (``-m slow``, ~50 s on 2 cores);
the argument checks are quick. The quick tier's export is a tiny model's,
in ``test_export_from_save_dir.py``.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from bilm_keras import Batcher
from bilm_keras.export.saved_model_export import (
    ExportError,
    export_hub,
    export_hub_from_save_dir,
)
from bilm_keras.weights.bilm_tf_hdf5 import WeightFileError
from helpers import load_bin_script, load_reference_embeddings

ATOL = 1e-5
CONSUMERS = pathlib.Path(__file__).with_name("hub_consumers.py")
KEYS = ("word_emb", "lstm_outputs1", "lstm_outputs2", "elmo", "default",
        "sequence_len")

EXTRA_SENTENCES = [
    "北京 欢迎 你 们 。",
    "",
    "x" * 80 + " a" + "中" * 20 + " " + "é" * 40,
    "  Привет ,\tмир !\u3000",
    "<S> inside </S>",
]

# a tiny labelled set: English sentences (1) vs digit/punctuation strings (0)
TRAIN = [
    ("the cat sat on the mat", 1), ("123 456 789", 0),
    ("a dog ran in the park", 1), ("!!! ??? 42", 0),
    ("she reads a good book", 1), ("7 8 9 10 ...", 0),
    ("we walked to the old town", 1), ("$$ 1,000 %% 3.14", 0),
]


def _files(model_dir):
    return dict(options_file=str(model_dir / "options.json"),
                weight_file=str(model_dir / "lm_weights.hdf5"),
                vocab_file=str(model_dir / "vocab_test.txt"))


@pytest.fixture(scope="module")
def exports(model_dir, tmp_path_factory, fixture_export):
    """The fixture model exported three times: twice the same way (the
    shared export, in an existing empty directory, and again through
    ``bin/export_hub.py --overwrite`` over a non-empty directory), once
    with ``trainable_lm`` and ``l2_coef``."""
    root = tmp_path_factory.mktemp("hub")
    files = _files(model_dir)
    first = fixture_export
    (root / "elmo_again").mkdir()
    (root / "elmo_again" / "keep.txt").write_text("old")
    again = load_bin_script("export_hub.py").main([
        "--options_file", files["options_file"],
        "--weight_file", files["weight_file"],
        "--vocab_file", files["vocab_file"],
        "--outdir", str(root / "elmo_again"), "--overwrite",
    ])
    trainable = export_hub(outdir=root / "elmo_lm", trainable_lm=True,
                           l2_coef=0.25,
                           options_file=files["options_file"],
                           weight_file=files["weight_file"])
    return dict(dir=first, dir_again=again, dir_trainable_lm=trainable,
                root=root)


@pytest.fixture(scope="module")
def sentences(model_dir):
    reference = load_reference_embeddings(model_dir)[0]
    first_batch = [" ".join(reference[k][0]) for k in range(3)]
    return first_batch + EXTRA_SENTENCES


def _run_consumer(mode, cfg, tmp_path, env=None):
    cfg_file = tmp_path / f"{mode}.json"
    out_file = tmp_path / f"{mode}.npz"
    cfg_file.write_text(json.dumps(cfg), encoding="utf-8")
    # a fresh interpreter, not helpers.python_argv: the SavedModel loads
    # without bilm_keras imported
    proc = subprocess.run(
        [sys.executable, str(CONSUMERS), mode, str(cfg_file), str(out_file)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("REPORT ")]
    assert line, proc.stdout[-2000:] + proc.stderr[-2000:]
    with np.load(out_file) as arrays:
        return json.loads(line[-1][len("REPORT "):]), dict(arrays)


@pytest.fixture(scope="module")
def reference(model_dir, sentences, fixture_bilm):
    """Expected outputs from the in-process model on Batcher ids (the
    session's stateless model of the same files)."""
    files = _files(model_dir)
    bilm = fixture_bilm
    ids = Batcher(files["vocab_file"], 50).batch_sentences(
        [s.split() for s in sentences])
    out = bilm(ids)
    lm = out["lm_embeddings"].numpy()  # (B, 3, T, 32)
    mask = out["mask"].numpy()[:, :, None]
    lengths = out["lengths"].numpy()
    # initial mix: softmax(0 + 1/3) = 1/3 each, gamma 1
    elmo = lm.mean(axis=1)
    return {
        "ids": ids,
        "word_emb": out["token_embeddings"].numpy()[:, 1:-1] * mask,
        "lstm_outputs1": lm[:, 1],
        "lstm_outputs2": lm[:, 2],
        "elmo": elmo,
        "default": elmo.sum(axis=1) / np.maximum(lengths, 1)[:, None],
        "sequence_len": lengths,
    }


def _train_cfg(exports, sentences, epochs):
    return dict(dir=exports["dir"], sentences=sentences, epochs=epochs,
                train_sentences=[s for s, _ in TRAIN],
                train_labels=[y for _, y in TRAIN])


@pytest.fixture(scope="module")
def hub_load_and_keras3_run(exports, sentences, reference,
                            tmp_path_factory):
    """``hub.load`` (first, before Keras is imported) and Keras 3 in one
    fresh process: ``({"hub_load": report, "keras3": report}, arrays)``.
    One process start and TensorFlow import fewer than a process each."""
    tokens = [s.split() for s in sentences]
    width = max(len(t) for t in tokens) + 1  # one more: width is kept
    cfg = dict(
        _train_cfg(exports, sentences, epochs=8),
        dir_again=exports["dir_again"],
        dir_trainable_lm=exports["dir_trainable_lm"],
        padded_tokens=[t + [""] * (width - len(t)) for t in tokens],
        sequence_len=[len(t) for t in tokens],
        char_ids=reference["ids"].tolist(),
    )
    return _run_consumer("hub_load,keras3", cfg,
                         tmp_path_factory.mktemp("c"))


@pytest.fixture(scope="module")
def hub_load_run(hub_load_and_keras3_run):
    reports, arrays = hub_load_and_keras3_run
    return reports["hub_load"], arrays


# ------------------------------------------------------------ hub.load
@pytest.mark.slow
def test_signatures_and_their_specs(hub_load_run):
    report, _ = hub_load_run
    sigs = report["signatures"]
    assert sorted(sigs) == ["default", "elmo", "tokens"]
    assert sigs["default"]["inputs"] == {"strings": ["string", [None]]}
    assert sigs["tokens"]["inputs"] == {
        "tokens": ["string", [None, None]],
        "sequence_len": ["int32", [None]],
    }
    assert sigs["elmo"]["inputs"] == {"char_ids": ["int32", [None, None, 50]]}
    for sig in sigs.values():
        assert sig["outputs"] == {
            "word_emb": ["float32", [None, None, 16]],
            "lstm_outputs1": ["float32", [None, None, 32]],
            "lstm_outputs2": ["float32", [None, None, 32]],
            "elmo": ["float32", [None, None, 32]],
            "default": ["float32", [None, 32]],
            "sequence_len": ["int32", [None]],
        }


@pytest.mark.slow
@pytest.mark.parametrize(
    "call", ["default", "positional", "elmo", "call", "call_training"])
def test_outputs_equal_the_in_process_model(hub_load_run, reference, call):
    _, arrays = hub_load_run
    for key in KEYS:
        got = arrays[f"{call}/{key}"]
        assert got.shape == reference[key].shape, key
        np.testing.assert_allclose(got, reference[key], atol=ATOL,
                                   err_msg=f"{call}/{key}")


@pytest.mark.slow
def test_tokens_signature_keeps_the_input_width(hub_load_run, reference):
    _, arrays = hub_load_run
    for key in KEYS:
        got, want = arrays[f"tokens/{key}"], reference[key]
        if got.ndim == 3:  # one extra all-"" column -> one extra zero step
            assert got.shape[1] == want.shape[1] + 1
            assert not got[:, -1].any()
            got = got[:, :-1]
        np.testing.assert_allclose(got, want, atol=ATOL, err_msg=key)


@pytest.mark.slow
def test_first_fixture_batch_matches_bilm_tf(hub_load_run, model_dir):
    # bilm-tf was stateful: its first batch started from zero states, as
    # every call of the stateless export does
    _, arrays = hub_load_run
    _, expected = load_reference_embeddings(model_dir)
    for k in range(3):
        want = expected[k][0]
        np.testing.assert_allclose(
            arrays["default/lstm_outputs2"][k, : len(want)], want, atol=ATOL)


@pytest.mark.slow
def test_edge_sentences(hub_load_run, sentences):
    _, arrays = hub_load_run
    empty = sentences.index("")
    assert arrays["default/sequence_len"][empty] == 0
    assert not arrays["default/default"][empty].any()
    assert not arrays["default/elmo"][empty].any()
    lengths = arrays["default/sequence_len"]
    for row, n in enumerate(lengths):  # zero past every row's length
        assert not arrays["default/elmo"][row, n:].any()
        assert not arrays["default/word_emb"][row, n:].any()


@pytest.mark.slow
def test_empty_batch_gives_empty_outputs(hub_load_run):
    report, _ = hub_load_run
    assert report["empty_batch"] == {
        "word_emb": [0, 0, 16], "lstm_outputs1": [0, 0, 32],
        "lstm_outputs2": [0, 0, 32], "elmo": [0, 0, 32],
        "default": [0, 32], "sequence_len": [0],
    }


@pytest.mark.slow
def test_bad_input_at_the_signatures(hub_load_run):
    errors = hub_load_run[0]["errors"]
    assert all(errors.values()), errors  # every bad call raised
    # wrong dtype: TensorFlow names the expected and the found dtype
    assert "expected to be a string tensor but is a int32" in (
        errors["default_int"])
    assert "expected to be a int32 tensor but is a float" in (
        errors["tokens_float_len"])
    assert "expected to be a int32 tensor but is a float" in (
        errors["elmo_float"])
    # values and sizes: our in-graph checks name the input
    assert "input must be a vector, got shape: [1,1]" in (
        errors["default_rank2"])
    assert "char_ids: expected 50 characters per token" in (
        errors["elmo_max_chars"]) and "[49]" in errors["elmo_max_chars"]
    assert "sequence_len: expected values <= tokens.shape[1]" in (
        errors["tokens_len_too_long"])
    assert "char_ids: expected values < 262" in errors["elmo_out_of_range"]
    assert errors["elmo_rank2"].startswith("InvalidArgumentError")
    # the root's tf.functions reject wrong ranks/dtypes by their TensorSpec
    for name in ("fn_default_rank2", "fn_elmo_rank2", "fn_tokens_int"):
        assert errors[name].startswith("TypeError"), errors[name]
        assert "TensorSpec(shape=(" in errors[name], errors[name]
    assert "TensorSpec(shape=(None,), dtype=tf.string" in errors["call_int"]


@pytest.mark.slow
def test_trainable_variables_and_assets(hub_load_run):
    report, _ = hub_load_run
    assert sorted(report["trainable"]) == [
        "scalar_mix/gamma:0", "scalar_mix/scalar_weights:0"]
    assert report["trainable_flags"] == 2  # the saved tf.Variables agree
    assert report["regularization_losses"] == 0
    assert report["assets"] == ["options.json", "vocab_test.txt"]
    n = report["trainable_lm_variables"]
    assert n == report["variables"] > 2
    assert report["trainable_lm"] == report["trainable_lm_flags"] == n
    # l2_coef: 0.25 * sum(w**2) of the mix weights, zero as exported
    assert report["trainable_lm_regularization"] == [0.0]


@pytest.mark.slow
def test_export_is_reproducible(hub_load_run, exports):
    report, arrays = hub_load_run
    assert report["signatures_again"] == ["default", "elmo", "tokens"]
    for key in KEYS:
        np.testing.assert_array_equal(arrays[f"again/{key}"],
                                      arrays[f"default/{key}"])
    assert report["signatures_again_specs"] == report["signatures"]


# --------------------------------------------------------------- Keras 3
@pytest.mark.slow
def test_keras3_fit_trains_the_scalar_mix(exports, reference,
                                          hub_load_and_keras3_run):
    reports, arrays = hub_load_and_keras3_run
    report = reports["keras3"]
    assert report["trainable"] == ["scalar_mix_gamma",
                                   "scalar_mix_scalar_weights"]
    loss = report["loss"]
    assert loss[-1] < loss[0] - 1e-3, loss
    assert report["changed"] == ["scalar_mix_gamma",
                                 "scalar_mix_scalar_weights"]
    assert np.abs(arrays["mix_after"]).max() > 1e-3
    # the layer rebuilt from its config loads the SavedModel afresh: the
    # exported (unfitted) mix, so the reference numbers
    np.testing.assert_allclose(arrays["clone_default"], reference["default"],
                               atol=ATOL)
    assert report["config"] == {"savedmodel_path": exports["dir"],
                                "signature": "default",
                                "output_key": "default"}
    for key in KEYS:  # TFSMLayer: inference through the signature
        np.testing.assert_allclose(arrays[f"tfsm/{key}"], reference[key],
                                   atol=ATOL, err_msg=key)


# ------------------------------------------------------------- tf_keras 2
@pytest.mark.nightly  # tf_keras's hub.KerasLayer in a fresh process
@pytest.mark.slow
def test_tf_keras_hub_keras_layer(exports, sentences, reference, tmp_path):
    report, arrays = _run_consumer(
        "tf_keras", _train_cfg(exports, sentences, epochs=8), tmp_path,
        env={"TF_USE_LEGACY_KERAS": "1"})
    assert report["trainable"] == ["scalar_mix/gamma:0",
                                   "scalar_mix/scalar_weights:0"]
    assert report["n_weights"] > 2  # the frozen LM weights are there too
    loss = report["loss"]
    assert loss[-1] < loss[0] - 1e-3, loss
    assert report["changed"] == report["trainable"]
    np.testing.assert_allclose(arrays["signature_default"],
                               reference["default"], atol=ATOL)
    assert "unsupported when calling a SavedModel signature" in (
        report["signature_trainable_error"])


# ------------------------------------------------ the export directory
def test_non_empty_outdir_is_refused(model_dir, tmp_path):
    outdir = tmp_path / "elmo"
    outdir.mkdir()
    (outdir / "keep.txt").write_text("old")
    with pytest.raises(ExportError, match="exists and is not empty"):
        export_hub(outdir=outdir, **_files(model_dir))
    # the command finds it in its checks, before TensorFlow (CommandError,
    # a ValueError as ExportError is)
    with pytest.raises(ValueError, match="exists and is not empty"):
        load_bin_script("export_hub.py").main([
            "--options_file", str(model_dir / "options.json"),
            "--weight_file", str(model_dir / "lm_weights.hdf5"),
            "--outdir", str(outdir)])
    # a failing export leaves the old directory whole, and no temp dirs
    with pytest.raises(WeightFileError, match="missing.hdf5"):
        export_hub(outdir=outdir, overwrite=True,
                   options_file=str(model_dir / "options.json"),
                   weight_file=str(tmp_path / "missing.hdf5"))
    assert sorted(os.listdir(outdir)) == ["keep.txt"]
    assert sorted(os.listdir(tmp_path)) == ["elmo"]


@pytest.mark.slow
def test_overwrite_replaced_the_directory(exports):
    again = pathlib.Path(exports["dir_again"])
    assert not (again / "keep.txt").exists()
    assert (again / "saved_model.pb").exists()
    assert sorted(os.listdir(exports["root"])) == [
        "elmo_again", "elmo_lm"]  # no temp dirs left
    shared = pathlib.Path(exports["dir"])
    assert sorted(os.listdir(shared.parent)) == ["elmo"]
    assert (shared / "saved_model.pb").exists()


def test_bad_export_arguments(model_dir, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ExportError, match="is not a directory"):
        export_hub(outdir=tmp_path / "file", **_files(model_dir))
    with pytest.raises(ExportError, match="vocabulary not found"):
        export_hub(outdir=tmp_path / "a",
                   options_file=str(model_dir / "options.json"),
                   weight_file=str(model_dir / "lm_weights.hdf5"),
                   vocab_file=str(tmp_path / "nope.txt"))
    token_options = json.loads((model_dir / "options.json").read_text())
    del token_options["char_cnn"]
    token_options["n_tokens_vocab"] = 10
    (tmp_path / "tok.json").write_text(json.dumps(token_options))
    # a word-input model exports with its vocabulary only
    # (test_word_input_hub_export.py)
    with pytest.raises(ExportError, match="a word-input model .* needs its "
                                          "vocabulary"):
        export_hub(outdir=tmp_path / "b",
                   options_file=str(tmp_path / "tok.json"),
                   weight_file=str(model_dir / "lm_weights.hdf5"))
    with pytest.raises(ExportError, match="no options.json"):
        export_hub_from_save_dir(save_dir=tmp_path, outdir=tmp_path / "c")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_cli_flag_combinations(tmp_path):
    cli = load_bin_script("export_hub.py")
    with pytest.raises(SystemExit):
        cli.main(["--options_file", "o.json", "--outdir", str(tmp_path)])
    with pytest.raises(SystemExit):
        cli.main(["--save_dir", "s", "--weight_file", "w.hdf5",
                  "--outdir", str(tmp_path)])
