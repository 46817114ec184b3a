"""``bilm-keras embed``'s cache choices: ``--mix`` / ``--mix_logits`` (a
task's mix of the layers), token input (``--vocab_file`` +
``--embedding_weight_file``, as bilm-tf's usage_token.py) and
``--use_sentence_keys``, against the library's ``"all"`` output of the
bilm-tf fixture model and a numpy mix of it."""

import concurrent.futures
import json
import os
import re
import subprocess
import sys

import h5py
import numpy as np
import pytest

from helpers import REPO_ROOT, user_env

from bilm_keras import cli
from bilm_keras.data.sentence_file import (
    SentenceFileError,
    check_sentence_file,
)

LINES = ["The cat sat .", "深度 学习", "a b c", "the cat"]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("embed_cache")
    (root / "ok.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    tokens = sorted({t for line in LINES for t in line.split()})
    # bilm-tf's usage_token.py vocabulary: <S>, </S> and the tokens
    (root / "vocab.txt").write_text("\n".join(["<S>", "</S>"] + tokens)
                                    + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def all_layers(fixture_bilm):
    """Every layer of ``LINES``, from the library (character input; the
    session's stateless fixture model)."""
    return fixture_bilm.embed_sentences([line.split() for line in LINES])


def _embed(model_dir, root, outfile, *extra, dataset="ok.txt"):
    return [str(a) for a in [
        "embed", "--options_file", model_dir / "options.json",
        "--weight_file", model_dir / "lm_weights.hdf5",
        "--dataset_file", root / dataset, "--outfile", outfile, *extra]]


@pytest.mark.parametrize("flags,s,form", [
    (["--mix", "0.2", "0.5", "0.3", "--gamma", "0.7"], [0.2, 0.5, 0.3],
     "weights"),
    # quick tier: tests/embedding/test_outputs.py has the logits' math
    pytest.param(
        ["--mix_logits", "0.3", "-1.2", "0.8", "--gamma", "0.7"],
        np.exp([0.3, -1.2, 0.8]) / np.exp([0.3, -1.2, 0.8]).sum(), "logits",
        marks=pytest.mark.slow),
])
def test_mix_file_is_a_numpy_mix_of_all(model_dir, root, all_layers,
                                        tmp_path, capsys, flags, s, form):
    out = tmp_path / "mix.hdf5"
    assert cli.run(_embed(model_dir, root, out, *flags)) == len(LINES)
    assert f"({'mix'}, float32)" in capsys.readouterr().out
    with h5py.File(out, "r") as f:
        for i, layers in enumerate(all_layers):
            want = 0.7 * np.einsum("k,knd->nd", s, layers.astype(np.float64))
            assert f[str(i)].shape == layers.shape[1:]  # one vector a token
            np.testing.assert_allclose(f[str(i)][...], want, rtol=1e-6,
                                       atol=1e-6)
        attrs = dict(f.attrs)
        assert attrs["output"] == "mix" and attrs["mix_form"] == form
        assert attrs["layout"] == "(n_tokens, dim)"
        assert list(attrs["layers"]) == [0, 1, 2]
        np.testing.assert_allclose(attrs["mix_weights"], s, rtol=1e-12)
        assert attrs["gamma"] == 0.7
        if form == "logits":
            assert list(attrs["mix_logits"]) == [0.3, -1.2, 0.8]
        else:
            assert "mix_logits" not in attrs


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_token_input_equals_character_input(model_dir, root, tmp_path):
    # usage_token.py's steps through the command: dump-tokens, then embed
    # from token ids; the numbers are character input's
    table = tmp_path / "elmo_token_embeddings.hdf5"
    cli.run([str(a) for a in [
        "dump-tokens", "--vocab_file", root / "vocab.txt", "--options_file",
        model_dir / "options.json", "--weight_file",
        model_dir / "lm_weights.hdf5", "--outfile", table]])
    by_tokens, by_chars = tmp_path / "tokens.hdf5", tmp_path / "chars.hdf5"
    cli.run(_embed(model_dir, root, by_tokens, "--vocab_file",
                   root / "vocab.txt", "--embedding_weight_file", table))
    cli.run(_embed(model_dir, root, by_chars))
    with h5py.File(by_tokens, "r") as t, h5py.File(by_chars, "r") as c:
        assert t.attrs["embedding_weight_file"] == str(table)
        assert c.attrs["embedding_weight_file"] == ""
        for i in range(len(LINES)):
            assert t[str(i)].shape == (3, len(LINES[i].split()), 32)
            np.testing.assert_allclose(t[str(i)][...], c[str(i)][...],
                                       atol=1e-5)


@pytest.mark.slow
def test_token_trained_model_reads_its_table_from_weight_file(root,
                                                              tmp_path):
    # a model trained on tokens (no char_cnn): its embedding is in its
    # weight file; the command embeds as the model's own padded call does
    from bilm_keras import BidirectionalLanguageModel, TokenBatcher
    from bilm_keras.models.bilm_backbone import BiLMBackbone
    from bilm_keras.options import BiLMOptions
    from bilm_keras.weights.bilm_tf_hdf5 import save_bilm_tf_hdf5

    vocab = root / "vocab.txt"
    n_tokens = TokenBatcher(str(vocab)).vocabulary_size
    options_file = tmp_path / "options.json"
    options_file.write_text(json.dumps({
        "lstm": {"dim": 12, "projection_dim": 6, "n_layers": 2,
                 "cell_clip": 3, "proj_clip": 3,
                 "use_skip_connections": True},
        "n_tokens_vocab": n_tokens, "bidirectional": True}))
    weight_file = tmp_path / "weights.hdf5"
    save_bilm_tf_hdf5(BiLMBackbone.from_options(
        BiLMOptions.from_json(options_file)).build_all(), weight_file)
    out = tmp_path / "elmo.hdf5"
    cli.run([str(a) for a in [
        "embed", "--options_file", options_file, "--weight_file",
        weight_file, "--dataset_file", root / "ok.txt", "--outfile", out,
        "--vocab_file", vocab]])
    model = BidirectionalLanguageModel(
        options_file, weight_file, use_character_inputs=False,
        embedding_weight_file=weight_file)
    with h5py.File(out, "r") as f:
        assert f.attrs["embedding_weight_file"] == str(weight_file)
        for i, line in enumerate(LINES):
            ids = TokenBatcher(str(vocab)).batch_sentences([line.split()])
            alone = model(ids)["lm_embeddings"].numpy()[0]
            np.testing.assert_allclose(f[str(i)][...], alone, atol=1e-6)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_sentence_keys(model_dir, root, all_layers, tmp_path):
    out = tmp_path / "keys.hdf5"
    cli.run(_embed(model_dir, root, out, "--use-sentence-keys", "--top"))
    with h5py.File(out, "r") as f:
        # AllenNLP's layout with sentence keys: no sentence_to_index
        assert sorted(f.keys()) == sorted(LINES)
        assert f.attrs["keys"] == "sentence"
        for line, layers in zip(LINES, all_layers):
            np.testing.assert_allclose(f[line][...], layers[2], atol=1e-6)
    # both spellings, as AllenNLP's flag and as this command's
    assert cli.parse_args(_embed(model_dir, root, out,
                                 "--use_sentence_keys")).use_sentence_keys


@pytest.mark.parametrize("lines,match", [
    (["a b", "c", "a b"], r"keys.txt, lines 1 and 3: the same sentence "
                          r"'a b', expected distinct sentences"),
    (["a b", "km / h"], r"keys.txt, line 2: 'km / h' contains '/' \(HDF5's "
                        r"group separator\), expected no '/'"),
    (["a b", "  ", "c"], r"keys.txt, line 2: blank, expected a sentence"),
    (["."], r"keys.txt, line 1: '.' names the file's root group"),
    (["a\0b"], r"keys.txt, line 1: 'a\\x00b' contains '\\x00'"),
])
def test_sentence_keys_refused(tmp_path, lines, match):
    dataset = tmp_path / "keys.txt"
    dataset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert check_sentence_file(dataset).n_lines == len(lines)  # line keys
    with pytest.raises(SentenceFileError,
                       match=match + r".*embed without them"):
        check_sentence_file(dataset, sentence_keys=True)


# checked before TensorFlow loads: one line, nothing written
RUNNER = """
import json, sys
from bilm_keras import cli
code = cli.main(sys.argv[1:])
print(json.dumps({"code": code, "tf": "tensorflow" in sys.modules}))
"""


def _before_tensorflow(model_dir, root):
    dup = root / "dup.txt"
    dup.write_text("a b\nc\na b\n", encoding="utf-8")
    small = root / "small_vocab.txt"
    small.write_text("<S>\n</S>\nThe\n", encoding="utf-8")
    table = root / "table.hdf5"
    with h5py.File(table, "w") as f:
        f.create_dataset("embedding", data=np.zeros((5, 16), np.float32))
    return [
        (["--mix", "0.5", "0.5"],
         r"--mix: expected 3 values, one per layer mixed \[0, 1, 2\], "
         r"found 2: \[0.5, 0.5\]"),
        (["--mix_logits", "1", "2", "--layers", "1"],
         r"--mix_logits: expected 1 value, one per layer mixed \[1\]"),
        (["--gamma", "2", "--average"],
         r"--gamma: only with output 'mix', found output 'average'"),
        (["--embedding_weight_file", table],
         r"--vocab_file: token input \(embedding_weight_file\) needs the "
         r"vocabulary of its token table, found None"),
        (["--embedding_weight_file", table, "--vocab_file", small],
         r"--embedding_weight_file .*table.hdf5: dataset 'embedding' has "
         r"shape \(5, 16\), expected \(3, 16\)"),
        (["--embedding_weight_file", small, "--vocab_file", small],
         r"--embedding_weight_file .*small_vocab.txt: expected an HDF5 "
         r"token table, found "),
        (["--use_sentence_keys", "--shard", "0/2"],
         r"--use_sentence_keys: not with shard \(a shard's datasets keep "
         r"their line numbers for the merge\)"),
        (["--use_sentence_keys"], None),  # dup.txt
    ]


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_errors_before_tensorflow(model_dir, root, tmp_path):
    out = tmp_path / "out.hdf5"
    cases = _before_tensorflow(model_dir, root)

    def run(case):  # a fresh interpreter each; they run at once
        flags, match = case
        dataset = "dup.txt" if match is None else "ok.txt"
        # a fresh interpreter, not helpers.python_argv: the report says
        # whether TensorFlow was imported
        return subprocess.run(
            [sys.executable, "-c", RUNNER,
             *_embed(model_dir, root, out, *map(str, flags),
                     dataset=dataset)],
            cwd=REPO_ROOT, env=user_env(), capture_output=True, text=True,
            timeout=120)

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        procs = list(pool.map(run, cases))
    for (_, match), proc in zip(cases, procs):
        report = json.loads(proc.stdout.splitlines()[-1])
        assert report == {"code": 1, "tf": False}, proc.stderr
        match = match or r".*dup.txt, lines 1 and 3: the same sentence"
        [line] = proc.stderr.splitlines()
        assert re.fullmatch("bilm-keras embed: error: " + match + ".*",
                            line), line
    assert not out.exists()


def test_mix_is_one_output_among_the_others(model_dir, root, capsys):
    with pytest.raises(SystemExit):
        cli.parse_args(_embed(model_dir, root, "x.hdf5", "--all", "--mix",
                              "1", "0", "0"))
    assert ("argument --mix: not allowed with argument --all"
            in capsys.readouterr().err)


def test_library_token_input_needs_a_vocabulary(model_dir, root, tmp_path):
    from bilm_keras import EmbeddingSpec, dump_bilm_embeddings
    from bilm_keras.embedding.dump_plan import DumpSettings

    out = tmp_path / "out.hdf5"
    with pytest.raises(ValueError, match=r"vocab_file: token input "
                                         r"\(embedding_weight_file\) needs "
                                         r"the vocabulary of its token "
                                         r"table, found None"):
        dump_bilm_embeddings(
            None, str(root / "ok.txt"), str(model_dir / "options.json"),
            str(model_dir / "lm_weights.hdf5"), str(out), EmbeddingSpec(),
            DumpSettings(embedding_weight_file=str(tmp_path / "table.hdf5"),
                         progress=False))
    assert not out.exists()


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_precision_bfloat16_near_float32_and_recorded(model_dir, root,
                                                      all_layers, tmp_path):
    """``--precision bfloat16``: every layer within the bounds of the
    library's float32 vectors (tests/helpers.py), the file says so."""
    from helpers import assert_near_float32

    out = tmp_path / "bf16.hdf5"
    assert cli.main(_embed(model_dir, root, out, "--precision",
                           "bfloat16")) == 0
    with h5py.File(out, "r") as f:
        assert f.attrs["precision"] == "bfloat16"
        got = [f[str(i)][...] for i in range(len(LINES))]
    assert got[0].dtype == np.float32
    for layer in range(3):
        assert_near_float32([w[layer] for w in all_layers],
                            [g[layer] for g in got], f"layer {layer}")


def test_unknown_precision_is_a_usage_error(model_dir, root, tmp_path,
                                            capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(_embed(model_dir, root, tmp_path / "x.hdf5",
                        "--precision", "int8"))
    assert exit_.value.code == 1
    assert ("argument --precision: invalid choice: 'int8'"
            in capsys.readouterr().err)
    assert not (tmp_path / "x.hdf5").exists()
