"""dump_token_embeddings / dump_bilm_embeddings write what the model
computes."""

import json
import os

import h5py
import numpy as np
import pytest

from bilm_keras import (
    Batcher,
    UnicodeCharsVocabulary,
    dump_bilm_embeddings,
    dump_token_embeddings,
)
from bilm_keras._utils.settings import SettingError
from bilm_keras.data.sentence_file import SentenceFileError
from bilm_keras.embedding.dump_plan import DumpSettings
from bilm_keras.embedding.outputs import EmbeddingSpec

LINES = [
    "The cat sat on the mat .",
    "",
    "深度 学习",
    "The cat sat on the mat .",
    "   ",
    "a",
]


@pytest.fixture(scope="module")
def files(model_dir):
    return (str(model_dir / "vocab_test.txt"), str(model_dir / "options.json"),
            str(model_dir / "lm_weights.hdf5"))


@pytest.fixture(scope="module")
def model(fixture_bilm):
    return fixture_bilm  # the model of files[1] and files[2]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_dump_bilm_embeddings(files, model, tmp_path):
    vocab, options, weights = files
    dataset = tmp_path / "sentences.txt"
    dataset.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "elmo.hdf5"
    n = dump_bilm_embeddings(
        vocab, str(dataset), options, weights, str(out), EmbeddingSpec(),
        DumpSettings(batch_size=2, progress=False))
    assert n == len(LINES)
    batcher = Batcher(vocab, 50)
    with h5py.File(out, "r") as f:
        keys = sorted(k for k in f.keys() if k != "sentence_to_index")
        assert sorted(keys, key=int) == [str(i) for i in range(n)]
        # AllenNLP's map: a line's text -> its dataset (a repeat: the last)
        index = json.loads(f["sentence_to_index"][0])
        assert index == {"The cat sat on the mat .": "3", "": "4",
                         "深度 学习": "2", "a": "5"}
        recorded = dict(f.attrs)
        assert list(recorded.pop("layers")) == [0, 1, 2]
        # the run's identity (embedding.runs.run_identity) and its hash
        run = json.loads(recorded.pop("run"))
        assert run["weight_file_size"] == os.path.getsize(weights)
        assert len(run["weight_file_sha256_ends"]) == 16
        assert (run["batch_size"], run["n_lines"]) == (2, len(LINES))
        assert len(recorded.pop("run_id")) == 16
        assert recorded == dict(
            output="all", dtype="float32", n_sentences=6,
            options_file=os.path.abspath(options),
            weight_file=os.path.abspath(weights),
            vocab_file=os.path.abspath(vocab),
            dataset_file=os.path.abspath(dataset),
            layout="(n_layers, n_tokens, dim)", bilm_keras_version="0.1.0",
            keys="line_number", embedding_weight_file="",
            precision="float32")
        for i, line in enumerate(LINES):
            tokens = line.split()
            assert f[str(i)].shape == (3, len(tokens), 32)
            # each sentence alone, from zero states
            alone = model(batcher.batch_sentences([tokens]))
            np.testing.assert_allclose(
                f[str(i)][...], alone["lm_embeddings"].numpy()[0], atol=1e-5)
        # stateless: a repeated sentence gets identical vectors
        np.testing.assert_array_equal(f["0"][...], f["3"][...])
    assert [p.name for p in tmp_path.iterdir()] != []
    assert not list(tmp_path.glob("*.tmp-*"))
    assert not list(tmp_path.glob("*.partial"))  # progress removed


@pytest.mark.parametrize("content,match", [
    (None, r"nope.txt: no such file"),
    (b"", r"empty input \(expected one whitespace-tokenized sentence per "
          r"line, found 0 lines\)"),
    (b" \n\n", r"found 2 lines, all blank"),
    (b"ok\ncaf\xe9 au lait\n",
     r"nope.txt, line 2: not valid UTF-8 at byte 3 of the line"),
])
def test_dump_bilm_embeddings_bad_input(files, tmp_path, content, match):
    dataset = tmp_path / "nope.txt"
    if content is not None:
        dataset.write_bytes(content)
    out = tmp_path / "elmo.hdf5"
    # the input is checked before the model loads: a missing weight file
    # is not what is reported
    with pytest.raises(SentenceFileError, match=match):
        dump_bilm_embeddings(
            files[0], str(dataset), files[1],
            str(tmp_path / "no_weights.hdf5"), str(out), EmbeddingSpec(),
            DumpSettings(progress=False))
    assert not out.exists()  # nothing written, not even an empty file
    assert not list(tmp_path.glob("*.tmp"))


@pytest.fixture(scope="module")
def full_dump(files, tmp_path_factory):
    """``(dataset, file)``: :data:`LINES` and their every-layer dump (the
    default output), written once for the output choices compared with
    it (read only)."""
    vocab, options, weights = files
    root = tmp_path_factory.mktemp("full_dump")
    dataset = root / "sentences.txt"
    dataset.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    full_file = root / "all.hdf5"
    dump_bilm_embeddings(
        vocab, str(dataset), options, weights, str(full_file),
        EmbeddingSpec(), DumpSettings(progress=False))
    return dataset, full_file


@pytest.mark.slow  # quick tier: test_cli's embed flags make these outputs
@pytest.mark.parametrize("output,layers,dataset_shape", [
    ("top", None, (7, 32)),
    ("average", [1, 2], (7, 32)),
    ("sentence_mean", None, (32,)),
])
def test_dump_output_choices(files, full_dump, tmp_path, output, layers,
                             dataset_shape):
    vocab, options, weights = files
    dataset, full_file = full_dump
    out = tmp_path / f"{output}.hdf5"
    dump_bilm_embeddings(
        vocab, str(dataset), options, weights, str(out),
        EmbeddingSpec(output=output, layers=layers),
        DumpSettings(progress=False))
    with h5py.File(out, "r") as f, h5py.File(full_file, "r") as full:
        assert f.attrs["output"] == output
        assert f["0"].shape == dataset_shape
        for i in range(len(LINES)):
            layers_all = full[str(i)][...]
            picked = layers_all if layers is None else layers_all[layers]
            if output == "top":
                want = layers_all[-1]
            elif output == "average":
                want = picked.mean(axis=0)
            else:
                mean = picked.mean(axis=0)
                want = mean.mean(axis=0) if len(mean) else np.zeros(32)
            np.testing.assert_allclose(f[str(i)][...], want, atol=1e-6)
        expected_layers = [2] if output == "top" else layers or [0, 1, 2]
        assert list(f.attrs["layers"]) == expected_layers


@pytest.mark.slow
def test_dump_progress_bar(files, tmp_path, capsys):
    vocab, options, weights = files
    dataset = tmp_path / "s.txt"
    dataset.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    dump_bilm_embeddings(
        vocab, str(dataset), options, weights, str(tmp_path / "o.hdf5"),
        EmbeddingSpec(), DumpSettings(batch_size=2))
    err = capsys.readouterr().err
    # not a terminal: one line at the start, one at the end
    assert err.splitlines()[-1].startswith(
        "s.txt 6/6 sentences [========================] 100%")
    assert "tokens/s" in err


def test_dump_token_embeddings(files, model, tmp_path):
    vocab_file, options, weights = files
    out = tmp_path / "tokens.hdf5"
    dump_token_embeddings(vocab_file, options, weights, str(out),
                          batch_size=100)
    vocab = UnicodeCharsVocabulary(vocab_file, 50)
    with h5py.File(out, "r") as f:
        emb = f["embedding"][...]
    assert emb.shape == (vocab.size, 16)
    # bilm-tf's way: one token at a time through the full model
    for k in (0, 1, vocab.bos, vocab.eos, vocab.size - 1):
        ids = (vocab.word_to_char_ids(vocab.id_to_word(k)) + 1)[None, None]
        tok = model(np.concatenate([ids] * 3, axis=1))["token_embeddings"]
        np.testing.assert_allclose(emb[k], tok.numpy()[0, 1], atol=1e-6)
    assert not list(tmp_path.glob("*.tmp-*"))


@pytest.mark.slow
def test_dump_command_layers_and_float16(files, model, tmp_path):
    import subprocess
    import sys

    from helpers import REPO_ROOT, user_env

    # a user's environment: this checkout's package, and not conftest's
    # TF log level (the command respects it); a fresh interpreter, not
    # helpers.python_argv: the command silences TensorFlow's start-up
    # lines itself before importing it
    env = user_env()

    vocab, options, weights = files
    dataset = tmp_path / "sentences.txt"
    dataset.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "small.hdf5"
    result = subprocess.run(
        [sys.executable, "bin/dump_bilm_embeddings.py", "--options_file",
         options, "--weight_file", weights, "--dataset_file", str(dataset),
         "--outfile", str(out), "--layers", "2", "1", "--float16"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"wrote {len(LINES)} sentences" in result.stdout
    # TensorFlow's start-up lines are silenced: only the progress bar
    assert result.stderr.startswith("sentences.txt 6/6 sentences"), \
        result.stderr
    full = model(Batcher(vocab, 50).batch_sentences([LINES[0].split()]))
    with h5py.File(out, "r") as f:
        assert f["0"].dtype == np.float16 and f["0"].shape == (2, 7, 32)
        np.testing.assert_allclose(
            f["0"][...].astype(np.float32),
            full["lm_embeddings"].numpy()[0, [2, 1]], atol=2e-3)


@pytest.mark.parametrize(
    "kwargs,match",
    [({"layers": [3]}, r"layers: expected indices in 0..2, found \[3\]"),
     ({"dtype": "int8"}, "dtype: expected 'float32' or 'float16'"),
     ({"output": "mean"}, "output: expected one of 'all', 'top', "
                          "'average', 'mix', 'sentence_mean', found 'mean'"),
     ({"output": "top", "layers": [1]}, "output 'top' is layer 2")],
)
def test_dump_bad_options(files, tmp_path, kwargs, match):
    dataset = tmp_path / "s.txt"
    dataset.write_text("a b\n")
    with pytest.raises(ValueError, match=match):
        dump_bilm_embeddings(files[0], str(dataset), files[1], files[2],
                             str(tmp_path / "o.hdf5"), EmbeddingSpec(**kwargs),
                             DumpSettings(progress=False))
    assert not (tmp_path / "o.hdf5").exists()


@pytest.mark.parametrize("changes,field,reason", [
    (dict(chunk_size=0), "chunk_size", "expected an integer >= 1, found 0"),
    (dict(batch_size=1.5), "batch_size",
     "expected an integer >= 1 or None, found 1.5"),
    (dict(shard=(4, 4)), "shard", "expected (K, N) with 0 <= K < N, found "
                                  "(4, 4)"),
    (dict(shard=(0, 2), use_sentence_keys=True), "use_sentence_keys",
     "not with shard (a shard's datasets keep their line numbers for the "
     "merge)"),
    (dict(progress="yes"), "progress", "expected True or False, found "
                                       "'yes'"),
    (dict(devices=[0]), "devices", "expected a list of device names, "
                                   "found [0]"),
    (dict(on_event="log"), "on_event", "expected a callable or None, found "
                                       "'log'"),
])
def test_dump_settings_are_checked_when_built(changes, field, reason):
    with pytest.raises(SettingError) as error:
        DumpSettings(**changes)
    assert (error.value.field, error.value.reason) == (field, reason)


def test_the_progress_callback_is_not_part_of_the_settings_value():
    # what the run writes does not depend on who watches it
    events = []
    watched = DumpSettings(batch_size=2, on_event=events.append)
    assert watched == DumpSettings(batch_size=2)
    assert watched.replace(batch_size=3).on_event == events.append


def test_dump_takes_values_not_keywords(files, tmp_path):
    vocab, options, weights = files
    dataset = tmp_path / "sentences.txt"
    dataset.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    settings = DumpSettings(devices="CPU:0", shard=[1, 2])
    assert (settings.devices, settings.shard) == (("CPU:0",), (1, 2))
    with pytest.raises(TypeError, match=r"^spec: expected an EmbeddingSpec"
                                        r", found dict$"):
        dump_bilm_embeddings(vocab, str(dataset), options, weights,
                             str(tmp_path / "x.hdf5"), {"output": "top"})
    with pytest.raises(TypeError, match=r"^settings: expected a "
                                        r"DumpSettings, found dict$"):
        dump_bilm_embeddings(vocab, str(dataset), options, weights,
                             str(tmp_path / "x.hdf5"), EmbeddingSpec(),
                             {"batch_size": 2})
    assert not any(p.name.startswith("x.hdf5") for p in tmp_path.iterdir())
