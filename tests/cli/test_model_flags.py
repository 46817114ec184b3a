"""``--model SPEC`` on ``embed``, ``dump-tokens`` and ``export-hub``, and
``train --init_model SPEC``, served by a local mirror (never the real
network): a model by name gives what its files by path give, and every
bad input (an unknown name, a 404, a body cut short, a hostile archive,
``--model`` beside the files' flags) is one line, exit 1, with nothing
left in the cache or at the output path."""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments)

import json

import h5py
import numpy as np
import pytest
from model_server import (  # noqa: F401 (fixtures)
    BILM_TF_ZIP,
    ELMO_SMALL_OPTIONS,
    ELMO_SMALL_WEIGHTS,
    ZH_ZIP,
    cache_contents,
    cache_dir,
    mirrored,
    model_server,
    served_files,
    zip_bytes,
)

from bilm_keras import cli
from helpers import hdf5_datasets


def _main(argv):
    """``bilm-keras ARGV`` in-process: ``(exit status, stdout, stderr)``
    through ``capsys`` of the caller."""
    try:
        return cli.main([str(a) for a in argv])
    except SystemExit as e:  # usage errors, from argparse
        return e.code



@pytest.fixture(scope="module")
def sentences(model_dir, tmp_path_factory):
    """Six sentences of the fixture model's vocabulary."""
    words = (model_dir / "vocab_test.txt").read_text("utf-8").split()[3:]
    path = tmp_path_factory.mktemp("model_flags") / "sentences.txt"
    path.write_text("\n".join(" ".join(words[i:i + 4 + i % 3])
                              for i in range(0, 36, 6)) + "\n", "utf-8")
    return path


# ----------------------------------------------- the model by name = by path
@pytest.mark.slow  # the quick tier has from_pretrained's bit-for-bit test
def test_embed_by_name(mirrored, cache_dir, sentences, fixture_bilm,
                       tmp_path, capsys):
    outfile = tmp_path / "elmo.hdf5"
    assert _main(["embed", "--model", "elmo-small", "--dataset_file",
                  sentences, "--outfile", outfile]) == 0
    assert "wrote 6 sentences" in capsys.readouterr().out
    got = hdf5_datasets(outfile)
    lines = sentences.read_text("utf-8").splitlines()
    want = fixture_bilm.embed_sentences([line.split() for line in lines])
    for i, w in enumerate(want):
        np.testing.assert_allclose(got[str(i)], w, rtol=0, atol=1e-6)
    with h5py.File(outfile, "r") as f:  # the files it was computed from
        assert str(cache_dir / "models" / "elmo-small") in json.dumps(
            {k: str(v) for k, v in f.attrs.items()})
    assert mirrored.requests[ELMO_SMALL_WEIGHTS] == 1


@pytest.mark.slow
def test_embed_by_name_equals_embed_by_path(mirrored, cache_dir, model_dir,
                                            sentences, tmp_path):
    by_name, by_path = tmp_path / "by_name.hdf5", tmp_path / "by_path.hdf5"
    assert _main(["embed", "--model", "elmo-small", "--dataset_file",
                  sentences, "--outfile", by_name]) == 0
    assert _main(["embed", "--options_file", model_dir / "options.json",
                  "--weight_file", model_dir / "lm_weights.hdf5",
                  "--dataset_file", sentences, "--outfile", by_path]) == 0
    got, want = hdf5_datasets(by_name), hdf5_datasets(by_path)
    assert sorted(got) == sorted(want) and len(got) == 7  # + the index
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.slow
def test_dump_tokens_by_url_takes_the_models_vocabulary(
        model_server, cache_dir, model_dir, tmp_path):
    # NLPL's bilm-tf zips ship vocab.txt: the default --vocab_file
    by_url, by_path = tmp_path / "by_url.hdf5", tmp_path / "by_path.hdf5"
    assert _main(["dump-tokens", "--model", model_server.url + BILM_TF_ZIP,
                  "--outfile", by_url]) == 0
    assert _main(["dump-tokens", "--vocab_file",
                  model_dir / "vocab_test.txt", "--options_file",
                  model_dir / "options.json", "--weight_file",
                  model_dir / "lm_weights.hdf5", "--outfile", by_path]) == 0
    np.testing.assert_array_equal(hdf5_datasets(by_url)["embedding"],
                                  hdf5_datasets(by_path)["embedding"])


@pytest.mark.slow
def test_export_hub_by_name_ships_the_models_files(mirrored, cache_dir,
                                                   tmp_path, capsys):
    outdir = tmp_path / "hub"
    assert _main(["export-hub", "--model", "manylangs-zh", "--outdir",
                  outdir]) == 0
    assert (outdir / "saved_model.pb").is_file()
    assets = sorted(p.name for p in (outdir / "assets").iterdir())
    assert {"options.json", "char.dic", "word.dic"} <= set(assets)


@pytest.fixture
def corpus(train_dir):
    return ["--train_prefix", train_dir / "data.txt",
            "--vocab_file", train_dir / "vocab.txt"]


def _adapt(corpus, save_dir, *model_flags):
    """One step of ``train`` with the LM frozen (``--freeze_lm_steps 1``):
    one train step traced, and the save_dir written."""
    return cli.run([str(a) for a in [
        "train", *corpus, "--save_dir", save_dir, *model_flags,
        "--batch_size", "2", "--n_epochs", "1", "--max_steps", "1",
        "--freeze_lm_steps", "1", "--seed", "7", "--log_every", "1000"]])


@pytest.mark.slow
def test_train_init_model_is_init_weights(mirrored, cache_dir, model_dir,
                                          corpus, tmp_path):
    # one step, the LM frozen (one train step traced per run, not two):
    # every LM weight after it is the one --init_model / --init_weights
    # loaded, so the weights compared below are the two inits themselves
    # (what this test is for), beside the softmax both trained alike
    by_name = _adapt(corpus, tmp_path / "by_name", "--init_model",
                     "elmo-small")
    by_path = _adapt(corpus, tmp_path / "by_path",
                     "--options", model_dir / "options.json",
                     "--init_weights", model_dir / "lm_weights.hdf5")
    assert by_name["step"] == by_path["step"] == 1
    assert by_name["options"] == by_path["options"]
    assert by_name["perplexity"] == by_path["perplexity"]
    for a, b in zip(by_name["model"].weights, by_path["model"].weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)


@pytest.mark.slow
def test_train_init_model_adapts_a_manylangs_model_with_its_dictionaries(
        mirrored, cache_dir, manylangs_reference, tmp_path):
    # as `convert-manylangs` + `train --options --init_weights` do: the
    # save_dir's options name copies of the model's dictionaries
    sentences = [s for s in manylangs_reference["sentences"]
                 if not any(c.isspace() for t in s for c in t)]
    (tmp_path / "train.txt").write_text(
        "\n".join(" ".join(s) for s in sentences * 4) + "\n", "utf-8")
    words = sorted({t for s in sentences for t in s})
    (tmp_path / "vocab.txt").write_text(
        "\n".join(["<S>", "</S>", "<UNK>", *words]) + "\n", "utf-8")
    save_dir = tmp_path / "adapted"
    # one step (the LM frozen) writes the save_dir this test reads; a
    # converted ManyLangs model's full-LM steps are trained and checked in
    # tests/training/test_manylangs_adaptation.py
    result = _adapt(["--train_prefix", tmp_path / "train.txt",
                     "--vocab_file", tmp_path / "vocab.txt"], save_dir,
                    "--init_model", "manylangs-zh")
    assert result["step"] == 1 and np.isfinite(result["perplexity"])
    saved = json.loads((save_dir / "options.json").read_text())
    assert saved["elmoformanylangs"]["char_dic"] == "char.dic"
    cached = cache_dir / "models" / "manylangs-zh"
    for name in ("char.dic", "word.dic"):
        assert (save_dir / name).read_bytes() == (cached / name).read_bytes()


# ----------------------------------------------------------- bad inputs
def _command_args(command, sentences, out, spec):
    """``command`` with good inputs and the model ``spec``; its output
    goes to ``out``."""
    return {
        "embed": ["embed", "--model", spec, "--dataset_file", sentences,
                  "--outfile", out / "elmo.hdf5"],
        "dump-tokens": ["dump-tokens", "--model", spec, "--vocab_file",
                        sentences, "--outfile", out / "tokens.hdf5"],
        "export-hub": ["export-hub", "--model", spec, "--outdir",
                       out / "hub"],
        "train": ["train", "--init_model", spec, "--train_prefix",
                  sentences, "--vocab_file", sentences, "--save_dir",
                  out / "ckpt"],
    }[command]


#: the flag beside which --model (--init_model) is refused
FILES_FLAG = {"embed": "--options_file", "dump-tokens": "--weight_file",
              "export-hub": "--save_dir", "train": "--init_weights"}


def _break(case, server):
    """Makes the server fail as ``case`` says; returns the spec to ask for
    and what the error line says."""
    if case == "unknown name":
        return "elmo-smal", ("'elmo-smal': unknown model name (did you mean "
                             "elmo-small")
    if case == "404":
        del server.routes[ELMO_SMALL_WEIGHTS]
        return "elmo-small", (f"elmo-small: {server.url}"
                              f"{ELMO_SMALL_WEIGHTS}: download failed: "
                              "HTTP 404")
    if case == "cut short":
        server.cut_short.add(ELMO_SMALL_OPTIONS)
        return "elmo-small", (f"elmo-small: {server.url}"
                              f"{ELMO_SMALL_OPTIONS}: download cut short: "
                              "expected")
    if case == "hostile archive":
        server.routes[ZH_ZIP] = zip_bytes({"tiny.model/config.json": b"{}",
                                           "../../outside.txt": b"x"})
        return "manylangs-zh", ("member '../../outside.txt': refused (a "
                                "path with '..')")
    raise AssertionError(case)


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.slow
@pytest.mark.parametrize("case", ["unknown name", "404", "cut short",
                                  "hostile archive", "files flags too"])
@pytest.mark.parametrize("command", sorted(FILES_FLAG))
def test_a_bad_model_is_one_line_and_leaves_nothing(
        mirrored, cache_dir, sentences, tmp_path, capsys, monkeypatch,
        command, case):
    flag = "--init_model" if command == "train" else "--model"
    out = tmp_path / "out"
    out.mkdir()
    if case == "files flags too":
        spec, says = "elmo-small", (f"give either {flag} or "
                                    f"{FILES_FLAG[command]}")
    else:
        spec, says = _break(case, mirrored)
    argv = _command_args(command, sentences, out, spec)
    if case == "files flags too":
        argv += [FILES_FLAG[command], sentences]

    def ran(*args, **kwargs):
        raise AssertionError("the command got past its checks")

    monkeypatch.setattr(cli, "import_tensorflow", ran)
    code = _main(argv)
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT == 1, err
    [line] = err.splitlines()  # one line, no usage block
    assert line.startswith(f"bilm-keras {command}: error: "), line
    assert says in line, line
    if case in ("404", "cut short", "hostile archive"):  # while fetching
        assert line.startswith(f"bilm-keras {command}: error: {flag}: ")
    elif case == "unknown name":  # while parsing
        assert f"argument {flag}: " in line and "`bilm-keras models`" in line
    assert _tree(out) == []  # nothing at the output path
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}
    # and nothing anywhere else (the hostile member aimed above the cache)
    assert {p.split("/")[0] for p in _tree(tmp_path)} <= {"out", "cache"}


#: a registered model each command cannot use with these flags, and what
#: the one line says: the model, the part it lacks, the flag that gives it
UNFIT = {
    "embed, word input": (
        ["embed", "--model", "paddle-baike-zh", "--dataset_file", "{in}",
         "--outfile", "{out}/elmo.hdf5"],
        "paddle-baike-zh: no vocabulary: the model ships none, and its "
        "word input needs one: pass it with --vocab_file "
        "(vocabulary_min5k.txt "),
    "embed, token input": (
        ["embed", "--model", "elmo-small", "--embedding_weight_file", "{in}",
         "--dataset_file", "{in}", "--outfile", "{out}/elmo.hdf5"],
        "elmo-small: no vocabulary: the model ships none, and token input "
        "needs one: pass it with --vocab_file"),
    "dump-tokens, no vocabulary": (
        ["dump-tokens", "--model", "elmo-small", "--outfile",
         "{out}/tokens.hdf5"],
        "elmo-small: no vocabulary: the model ships none, and token input "
        "needs one: pass it with --vocab_file"),
    "dump-tokens, word input": (
        ["dump-tokens", "--model", "paddle-baike-zh", "--vocab_file", "{in}",
         "--outfile", "{out}/tokens.hdf5"],
        "paddle-baike-zh: the model takes words: it has no char-CNN to "
        "embed tokens with"),
    "export-hub": (
        ["export-hub", "--model", "paddle-baike-zh", "--outdir",
         "{out}/hub"],
        "paddle-baike-zh: no vocabulary: the model ships none, and its "
        "word input needs one: pass it with --vocab_file "
        "(vocabulary_min5k.txt "),
    "serve": (
        ["serve", "--model", "en=elmo-small", "--model",
         "zh=paddle-baike-zh"],
        "paddle-baike-zh: no vocabulary: the model ships none, and its "
        "word input needs one: give a model folder holding it as "
        "vocab*.txt (vocabulary_min5k.txt "),
}


@pytest.mark.parametrize("case", sorted(UNFIT))
def test_a_model_unfit_for_the_command_is_refused_before_a_download(
        mirrored, cache_dir, sentences, tmp_path, capsys, monkeypatch,
        case):
    # the registry's row says it: nothing is fetched, nothing is cached
    template, says = UNFIT[case]
    out = tmp_path / "out"
    out.mkdir()
    argv = [str(a).replace("{in}", str(sentences)).replace("{out}", str(out))
            for a in template]

    def ran(*args, **kwargs):
        raise AssertionError("the command got past its checks")

    monkeypatch.setattr(cli, "import_tensorflow", ran)
    assert _main(argv) == cli.EXIT_BAD_INPUT
    [line] = capsys.readouterr().err.splitlines()
    command = argv[0]
    assert line.startswith(f"bilm-keras {command}: error: {says}"), line
    assert sum(mirrored.requests.values()) == 0
    assert not cache_dir.exists()
    assert _tree(out) == []


def test_the_next_good_download_works(mirrored, cache_dir, sentences,
                                      tmp_path, capsys, monkeypatch):
    # a cut-short body leaves nothing behind, so the next try starts clean
    mirrored.cut_short.add(ELMO_SMALL_WEIGHTS)
    argv = ["dump-tokens", "--model", "elmo-small", "--vocab_file",
            sentences, "--outfile", tmp_path / "tokens.hdf5"]
    monkeypatch.setattr(cli.dump_tokens, "run", lambda args: None)
    assert _main(argv) == 1
    assert "download cut short" in capsys.readouterr().err
    assert _main(argv) == 0
    assert cache_contents(cache_dir) == {"models": ["elmo-small"],
                                         "tmp": []}
    assert mirrored.requests[ELMO_SMALL_WEIGHTS] == 2


def test_a_model_directory_without_vocabulary_needs_vocab_file(
        model_dir, cache_dir, tmp_path, capsys):
    # a model of no registry: known to ship none once it is resolved
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("options.json", "lm_weights.hdf5"):
        (folder / name).symlink_to(model_dir / name)
    code = _main(["dump-tokens", "--model", folder, "--outfile",
                  tmp_path / "tokens.hdf5"])
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        "bilm-keras dump-tokens: error: --vocab_file: required: the model "
        f"{folder} ships no vocabulary"]
    assert not (tmp_path / "tokens.hdf5").exists()


@pytest.mark.parametrize("argv,line", [
    (["embed", "--dataset_file", "s.txt", "--outfile", "o.hdf5"],
     "the following arguments are required: --model, or --options_file "
     "and --weight_file"),
    (["embed", "--model", "elmo-small", "--weight_file", "w.hdf5",
      "--dataset_file", "s.txt", "--outfile", "o.hdf5"],
     "give either --model or --weight_file, not both"),
    (["dump-tokens", "--options_file", "o.json", "--weight_file", "w.hdf5",
      "--outfile", "t.hdf5"],
     "the following arguments are required: --vocab_file"),
    (["export-hub", "--model", "elmo-small", "--options_file", "o.json",
      "--outdir", "hub"],
     "give either --model or --options_file and --weight_file, not both"),
    (["train", "--init_model", "elmo-small", "--options", "small",
      "--train_prefix", "t", "--vocab_file", "v", "--save_dir", "s"],
     "give either --init_model or --options, not both"),
])
def test_flag_combinations(argv, line, capsys):
    assert _main(argv) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"bilm-keras {argv[0]}: error: {line}")


def test_model_with_a_remote_beam_runner_is_refused(mirrored, cache_dir,
                                                    sentences, tmp_path,
                                                    capsys):
    # its workers would get this machine's cache paths; a local runner
    # (DirectRunner) reads them
    code = _main(["embed", "--model", "elmo-small", "--dataset_file",
                  sentences, "--outfile", tmp_path / "elmo.hdf5",
                  "--runner", "DataflowRunner"])
    assert code == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err.splitlines() == [
        "bilm-keras embed: error: --model: not with --runner DataflowRunner "
        "(its workers cannot read this machine's model cache); give "
        "--options_file and --weight_file on a file system the workers "
        "reach"]
    assert sum(mirrored.requests.values()) == 0
    assert not cache_dir.exists()
