"""``bilm-keras embed --alignment`` (each layer ``h`` as ``h @ W.T``, as
the facade maps it) and a bare ``--mix`` (the model's learned mix: a
converted TF1 Hub module's own ``elmo`` output, as the facade gives it),
checked against numpy and the module's own outputs; bad input is one
line with nothing written."""

import json
import pathlib

import h5py
import numpy as np
import pytest

from bilm_keras import cli

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
XLING = FIXTURES / "xling"
MODULES = FIXTURES / "tfhub_modules"
LINES = ["The cat sat .", "a b c"]


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    path = tmp_path_factory.mktemp("xling") / "text.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def _embed(model_dir, text, outfile, *extra):
    return [str(a) for a in [
        "embed", "--options_file", model_dir / "options.json",
        "--weight_file", model_dir / "lm_weights.hdf5",
        "--dataset_file", text, "--outfile", outfile, *extra]]


@pytest.mark.slow
def test_alignment_maps_each_layer(model_dir, fixture_bilm, text, tmp_path):
    out = tmp_path / "aligned.hdf5"
    files = [XLING / f"layer_{k}.pth" for k in range(3)]
    assert cli.main(_embed(model_dir, text, out, "--alignment",
                           *files)) == 0
    plain = fixture_bilm.embed_sentences([line.split() for line in LINES])
    with np.load(XLING / "matrices.npz") as f:
        matrices = [f[f"layer_{k}"].astype(np.float64) for k in range(3)]
    with h5py.File(out, "r") as f:
        for i, layers in enumerate(plain):
            got = f[str(i)][...]
            for k in range(3):
                np.testing.assert_allclose(
                    got[k], layers[k].astype(np.float64) @ matrices[k].T,
                    rtol=0, atol=1e-6)


def test_an_alignment_of_the_wrong_shape_is_one_line(model_dir, text,
                                                     tmp_path, capsys):
    out = tmp_path / "x.hdf5"
    assert cli.main(_embed(model_dir, text, out, "--alignment",
                           XLING / "small.pth")) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("bilm-keras embed: error: --alignment ")
    assert str(XLING / "small.pth") in err
    assert "(32, 32)" in err and "(16, 16)" in err
    assert not out.exists()


def test_published_alignment_of_a_model_without_one_is_one_line(
        model_dir, text, tmp_path, capsys):
    out = tmp_path / "x.hdf5"
    assert cli.main(_embed(model_dir, text, out, "--alignment",
                           "published")) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--alignment: expected a model published with an alignment" in err
    assert not out.exists()


@pytest.mark.parametrize("name", [
    "google", pytest.param("deeppavlov", marks=pytest.mark.slow)])
def test_a_bare_mix_is_the_modules_own_elmo(name, tmp_path):
    converted = tmp_path / "elmo"
    assert cli.main(["convert-tfhub", "--module", str(MODULES / name),
                     "--outdir", str(converted)]) == 0
    # reference.npz: the module's default signature on sentence 0 of each
    # list of bilm-tf's fixture sentences
    sentences = [s[0].split() for s in json.loads(
        (FIXTURES / "bilm-tf" / "model" / "lm_embeddings_sentences.json")
        .read_text("utf-8"))]
    text = tmp_path / "text.txt"
    text.write_text("\n".join(" ".join(s) for s in sentences) + "\n",
                    "utf-8")
    out = tmp_path / "mix.hdf5"
    assert cli.main(["embed", "--model", str(converted), "--dataset_file",
                     str(text), "--outfile", str(out), "--mix"]) == 0
    with np.load(MODULES / "reference.npz") as f:
        own = f[f"{name}/default/elmo"]
    with h5py.File(out, "r") as f:
        for k, sentence in enumerate(sentences):
            n = len(sentence)
            np.testing.assert_allclose(f[str(k)][...], own[k, :n], rtol=0,
                                       atol=1e-6)


def test_a_bare_mix_without_a_learned_one_is_one_line(model_dir, text,
                                                      tmp_path, capsys):
    out = tmp_path / "x.hdf5"
    assert cli.main(_embed(model_dir, text, out, "--mix")) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert ("--mix: expected weights S0 S1 ..., or a model with a learned "
            "mix (mix.json beside its weights") in err
    assert str(model_dir) in err
    assert not out.exists()


def test_a_bare_mix_takes_no_gamma(model_dir, text, tmp_path, capsys):
    assert cli.main(_embed(model_dir, text, tmp_path / "x.hdf5", "--mix",
                           "--gamma", "0.5")) != 0
    assert "--gamma: not with a bare --mix" in capsys.readouterr().err
