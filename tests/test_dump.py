"""dump_token_embeddings / dump_bilm_embeddings write what the model computes."""

import h5py
import numpy as np
import pytest

from bilm_keras import (
    Batcher,
    BidirectionalLanguageModel,
    UnicodeCharsVocabulary,
    dump_bilm_embeddings,
    dump_token_embeddings,
)

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
def model(files):
    return BidirectionalLanguageModel(files[1], files[2])


def test_dump_bilm_embeddings(files, model, tmp_path):
    vocab, options, weights = files
    dataset = tmp_path / "sentences.txt"
    dataset.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "elmo.hdf5"
    n = dump_bilm_embeddings(vocab, str(dataset), options, weights, str(out),
                             batch_size=2, progress=False)
    assert n == len(LINES)
    batcher = Batcher(vocab, 50)
    with h5py.File(out, "r") as f:
        assert sorted(f.keys(), key=int) == [str(i) for i in range(n)]
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


def test_dump_bilm_embeddings_missing_dataset(files, tmp_path):
    out = tmp_path / "elmo.hdf5"
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        dump_bilm_embeddings(files[0], str(tmp_path / "nope.txt"), files[1],
                             files[2], str(out), progress=False)
    assert list(tmp_path.iterdir()) == []  # nothing half-written


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


def test_dump_command_layers_and_float16(files, model, tmp_path):
    import subprocess
    import sys

    from conftest import REPO_ROOT

    vocab, options, weights = files
    dataset = tmp_path / "sentences.txt"
    dataset.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "small.hdf5"
    result = subprocess.run(
        [sys.executable, "bin/dump_bilm_embeddings.py", "--options_file",
         options, "--weight_file", weights, "--dataset_file", str(dataset),
         "--outfile", str(out), "--layers", "2", "1", "--float16"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"wrote {len(LINES)} sentences" in result.stdout
    full = model(Batcher(vocab, 50).batch_sentences([LINES[0].split()]))
    with h5py.File(out, "r") as f:
        assert f["0"].dtype == np.float16 and f["0"].shape == (2, 7, 32)
        np.testing.assert_allclose(
            f["0"][...].astype(np.float32),
            full["lm_embeddings"].numpy()[0, [2, 1]], atol=2e-3)


@pytest.mark.parametrize(
    "kwargs,match",
    [({"layers": [3]}, r"layers: expected indices in 0..2, found \[3\]"),
     ({"dtype": "int8"}, "dtype: expected 'float32' or 'float16'")],
)
def test_dump_bad_options(files, tmp_path, kwargs, match):
    dataset = tmp_path / "s.txt"
    dataset.write_text("a b\n")
    with pytest.raises(ValueError, match=match):
        dump_bilm_embeddings(files[0], str(dataset), files[1], files[2],
                             str(tmp_path / "o.hdf5"), progress=False,
                             **kwargs)
    assert not (tmp_path / "o.hdf5").exists()
