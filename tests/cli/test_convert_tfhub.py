"""``bilm-keras convert-tfhub`` and its alias ``bin/convert_tfhub.py``:
the converted folder embeds bilm-tf's reference embeddings through
``bilm-keras embed`` and through an exported SavedModel (1e-6); errors are
one line with nothing written."""

import pathlib

import h5py
import numpy as np
import pytest

from bilm_keras import cli
from helpers import load_bin_script, load_reference_embeddings

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
MODULES = FIXTURES / "tfhub_modules"
ATOL = 1e-6


def test_convert_tfhub_writes_the_three_files(tmp_path, capsys):
    out = tmp_path / "elmo"
    result = load_bin_script("convert_tfhub.py").main(
        ["--module", str(MODULES / "deeppavlov"), "--outdir", str(out)])
    assert sorted(p.name for p in out.iterdir()) == [
        "lm_weights.hdf5", "mix.json", "options.json"]
    assert result["mix_file"] == str(out / "mix.json")
    assert "mix.json" in capsys.readouterr().out
    # a second run needs --overwrite
    assert cli.main(["convert-tfhub", "--module", str(MODULES / "google"),
                     "--outdir", str(out)]) == 1
    err = capsys.readouterr().err
    assert "--overwrite" in err and len(err.strip().splitlines()) == 1
    assert cli.main(["convert-tfhub", "--module", str(MODULES / "google"),
                     "--outdir", str(out), "--overwrite"]) == 0


def test_a_missing_options_file_is_one_line(tmp_path, capsys):
    assert cli.main(["convert-tfhub", "--module", str(MODULES / "google"),
                     "--options_file", str(tmp_path / "none.json"),
                     "--outdir", str(tmp_path / "out")]) != 0
    err = capsys.readouterr().err.strip()
    assert "--options_file" in err and "no such file" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a model, and an exported SavedModel
@pytest.mark.parametrize("name", [
    "google",
    # the same path on the other module's names: the nightly tier
    pytest.param("deeppavlov", marks=pytest.mark.nightly)])
def test_converted_module_embeds_bilm_tfs_reference(name, tmp_path):
    out = tmp_path / "elmo"
    assert cli.main(["convert-tfhub", "--module", str(MODULES / name),
                     "--outdir", str(out)]) == 0
    sentences, expected = load_reference_embeddings(FIXTURES / "bilm-tf"
                                                    / "model")
    batch = [lst[0] for lst in sentences]
    want = [lst[0] for lst in expected]
    text = tmp_path / "text.txt"
    text.write_text("\n".join(" ".join(s) for s in batch) + "\n", "utf-8")
    # bilm-keras embed --model OUT
    embeddings = tmp_path / "elmo.hdf5"
    assert cli.main(["embed", "--model", str(out), "--dataset_file",
                     str(text), "--outfile", str(embeddings)]) == 0
    with h5py.File(embeddings, "r") as f:
        for k, w in enumerate(want):
            np.testing.assert_allclose(f[str(k)][2], w, rtol=0, atol=ATOL)
    # our SavedModel, exported from the converted folder
    import tensorflow as tf

    hub = tmp_path / "hub"
    assert cli.main(["export-hub", "--model", str(out), "--outdir",
                     str(hub)]) == 0
    module = tf.saved_model.load(str(hub))
    got = module.signatures["default"](
        strings=tf.constant([" ".join(s) for s in batch]))
    with np.load(MODULES / "reference.npz") as f:
        own = f[f"{name}/default/elmo"]
    for k, w in enumerate(want):
        n = len(batch[k])
        np.testing.assert_allclose(got["lstm_outputs2"][k, :n], w, rtol=0,
                                   atol=ATOL)
        # the scalar mix starts from the module's learned one
        np.testing.assert_allclose(got["elmo"][k, :n], own[k, :n], rtol=0,
                                   atol=ATOL)
