"""The seeds' recipes as examples: ``examples/sentence_classifier.py``
(PaddleNLP's ``run_finetune.py``) and ``examples/lac_tagger.py`` (Paddle's
ELMo LAC demo). Their readers and span F1 on hand-made cases, each
script's ``main(argv)`` with bilm-tf's test biLM, and each documented
command on the tasks of ``tests/fixtures/stdlib_context/`` with the
README demo's biLM, where ELMo must beat the words-only baseline."""

import math

import numpy as np
import pytest

from helpers import REPO_ROOT, load_script

DOCS = REPO_ROOT / "tests" / "fixtures" / "stdlib_context"
#: the held-out figures the documented commands must reach with the
#: demo biLM (its three epochs), below the least of the seeds measured
#: (the measurements are in the tests at the end): ELMo's accuracy at
#: least 0.55 (measured 0.700 at the least) and 0.05 above the
#: words-only baseline's (measured 0.195 at the least); ELMo's span F1 at
#: least 0.24 (measured 0.278 at the least; two guesses a sentence score
#: 0.21) and 0.02 above the baseline's (measured 0.042 at the least)
CLASSIFIER_ABOVE_CHANCE = 0.05
CLASSIFIER_MARGIN = 0.05
TAGGER_ABOVE_CHANCE = 0.24
TAGGER_MARGIN = 0.02


@pytest.fixture(scope="module")
def classifier():
    return load_script("examples/sentence_classifier.py")


@pytest.fixture(scope="module")
def tagger():
    return load_script("examples/lac_tagger.py")


# ------------------------------------------------------------------ readers
def test_tsv_reader(classifier, tmp_path):
    path = tmp_path / "a.tsv"
    path.write_text("pos\tA  good film .\n\nneg\tdull\n", encoding="utf-8")
    assert classifier.read_tsv(str(path)) == (
        ["A good film .", "dull"], ["pos", "neg"])


@pytest.mark.parametrize("text, line, found", [
    ("pos\tfine\nno tab here\n", 2, "found 1 field"),
    ("pos\tfine\textra\n", 1, "found 3 field"),
    ("pos\t   \n", 1, "found 2 field"),
])
def test_tsv_reader_names_a_bad_line(classifier, tmp_path, text, line,
                                     found):
    path = tmp_path / "bad.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}, line {line}: expected "
                       f"LABEL<TAB>SENTENCE, {found}"):
        classifier.read_tsv(str(path))


def test_tsv_reader_refuses_an_unknown_test_label(classifier, tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("pos\tfine\nodd\tstrange\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2: label 'odd' is not one "
                       r"of the training labels \['neg', 'pos'\]"):
        classifier.read_tsv(str(path), labels={"pos", "neg"})


def test_conll_reader(tagger, tmp_path):
    path = tmp_path / "a.conll"
    path.write_text("-DOCSTART- O\n\nUse X B-FUNC\njson Y I-FUNC\n\n\n"
                    "Go O\n", encoding="utf-8")
    assert tagger.read_conll(str(path)) == (
        [["Use", "json"], ["Go"]], [["B-FUNC", "I-FUNC"], ["O"]])


def test_conll_reader_names_a_bad_line(tagger, tmp_path):
    path = tmp_path / "bad.conll"
    path.write_text("Use O\nlonely\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}, line 2: expected TOKEN "
                       r"\.\.\. TAG columns, found 1"):
        tagger.read_conll(str(path))


def test_the_fixtures_read_whole(classifier, tagger):
    text, labels = classifier.read_tsv(str(DOCS / "order_train.tsv"))
    assert len(text) == 400 and labels.count("natural") == 200
    assert sorted(set(labels)) == ["natural", "shuffled"]
    sentences, tags = tagger.read_conll(str(DOCS / "odd_test.conll"))
    assert len(sentences) == 200
    assert all(len(s) == len(t) for s, t in zip(sentences, tags))
    # two replaced tokens a sentence, never its last
    assert all(t.count("B-ODD") == 2 and t.count("O") == len(t) - 2
               and t[-1] == "O" for t in tags)


# ----------------------------------------------------------------- span F1
@pytest.mark.parametrize("tags, expected", [
    (["O", "B-X", "I-X", "O"], {("X", 1, 3)}),
    (["B-X", "B-X", "I-X"], {("X", 0, 1), ("X", 1, 3)}),
    # conlleval: an I- that continues nothing starts a span
    (["O", "I-X", "I-X"], {("X", 1, 3)}),
    (["B-X", "I-Y", "O"], {("X", 0, 1), ("Y", 1, 2)}),
    (["B-X", "I-X"], {("X", 0, 2)}),
    (["O", "O"], set()),
])
def test_spans(tagger, tags, expected):
    assert tagger.spans(tags) == expected


def test_span_f1_by_hand(tagger):
    gold = [["B-A", "I-A", "O", "B-B"], ["B-A", "O"]]
    predicted = [["B-A", "I-A", "O", "B-A"], ["B-A", "B-B"]]
    # gold spans 3; predicted 4; right 2 (A 0-2 and A 0-1)
    scores = tagger.span_f1(gold, predicted)
    assert scores["gold_spans"] == 3 and scores["predicted_spans"] == 4
    assert scores["precision"] == 0.5
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))


# ------------------------------------------------------------- end to end
def _run(script, args, bilm_fixtures, monkeypatch, capsys):
    monkeypatch.setenv("BILM_FIXTURES", str(bilm_fixtures))
    result = script.main(args)
    lines = capsys.readouterr().out.splitlines()
    assert lines and lines[-1].startswith("RESULT "), lines[-3:]
    return result


def _hdf5_weights(path):
    """The number of weights in a bilm-tf HDF5 file, and its char table's
    width."""
    import h5py
    import numpy as np

    shapes = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: shapes.__setitem__(name, obj.shape)
                     if isinstance(obj, h5py.Dataset) else None)
    return sum(int(np.prod(s)) for s in shapes.values()), \
        shapes["char_embed"][1]


def _first_lines(path, n, folder):
    """A copy of the first ``n`` lines of ``path`` in ``folder``."""
    lines = path.read_text("utf-8").splitlines(keepends=True)[:n]
    copy = folder / path.name
    copy.write_text("".join(lines), encoding="utf-8")
    return str(copy)


@pytest.mark.nightly
@pytest.mark.slow
def test_sentence_classifier(classifier, bilm_fixtures, monkeypatch,
                             capsys, tmp_path):
    """The script end to end with its default ``--trainable mix``; what
    each ``--trainable`` trains is the next test's, without a fit."""
    result = _run(classifier, [
        "--train", _first_lines(DOCS / "order_train.tsv", 120, tmp_path),
        "--test", _first_lines(DOCS / "order_test.tsv", 40, tmp_path),
        "--epochs", "8", "--no_baseline"],
        bilm_fixtures, monkeypatch, capsys)
    assert result["n_train"] == 120 and result["n_test"] == 40
    assert result["labels"] == ["natural", "shuffled"]
    assert "words_only" not in result
    assert result["trainable"] == "mix"
    # the mix: 3 weights (2 LSTM layers + the token layer) and gamma
    assert result["trainable_weights"] == 4
    assert result["mix_before"] == {"weights": [0.3333] * 3, "gamma": 1.0}
    assert result["mix_after"] != result["mix_before"]
    # what a biLM lets the head learn is the test below's, on the demo
    # biLM: bilm-tf's tiny test model cannot tell the word orders apart
    # (the loss stays at ln 2), so only that training ran is checked here
    assert len(result["loss"]) == 8
    assert all(math.isfinite(x) for x in result["loss"])
    assert 0 <= result["test_accuracy"] <= 1


@pytest.mark.nightly
@pytest.mark.slow
def test_lac_tagger(tagger, bilm_fixtures, monkeypatch, capsys):
    result = _run(tagger, [
        "--train", str(DOCS / "odd_train.conll"),
        "--test", str(DOCS / "odd_test.conll"), "--epochs", "12",
        "--learning_rate", "0.01", "--word_emb_dim", "16",
        "--grnn_hidden_dim", "16", "--max_sentences", "120",
        "--no_baseline"], bilm_fixtures, monkeypatch, capsys)
    assert result["n_train"] == 120 and result["n_test"] == 200
    loss = result["loss"]
    assert loss[-1] < 0.5 * loss[0], loss
    # every held-out span starts with B- in this file: count them apart
    text = (DOCS / "odd_test.conll").read_text("utf-8")
    assert result["test"]["gold_spans"] == text.count("\tB-")
    test = result["test"]
    assert 0 <= test["f1"] <= 1
    assert len(result["mix_weights"]) == 3
    assert sum(result["mix_weights"]) == pytest.approx(1, abs=1e-3)


@pytest.mark.parametrize("option", ["none", "mix", "all"])
def test_what_a_model_on_the_layer_trains(classifier, bilm_fixtures,
                                          option):
    """``--trainable none`` trains the head alone: the layer's sublayers
    are frozen with it (a Keras layer made untrainable in its constructor
    does not pass that on to sublayers made after it). ``mix`` adds the
    mix's 3 weights (2 LSTM layers + the token layer) and gamma; ``all``
    the biLM too: the HDF5 file's weights and the char table's padding
    row, counted from the file."""
    import keras

    from bilm_keras import ELMoEmbedding

    n_lm, char_dim = _hdf5_weights(bilm_fixtures / "model" /
                                   "lm_weights.hdf5")
    elmo = ELMoEmbedding.from_pretrained(
        str(bilm_fixtures / "model"), output="sentence",
        trainable=classifier.TRAINABLE[option])
    text = keras.Input(shape=(), dtype="string")
    model = keras.Model(text, keras.layers.Dense(2, name="head")(elmo(text)))
    head = {"head/bias", "head/kernel"}
    paths = {v.path for v in model.trainable_variables}
    assert head <= paths
    if option == "none":
        assert paths == head
    if option == "mix":
        assert paths == head | {"scalar_mix/gamma",
                                "scalar_mix/scalar_weights"}
    n_weights = sum(int(np.prod(w.shape)) for w in elmo.trainable_weights)
    assert n_weights == {"none": 0, "mix": 4,
                         "all": 4 + n_lm + char_dim}[option]


@pytest.mark.nightly
def test_the_examples_on_converted_models(classifier, tagger,
                                          manylangs_converted, monkeypatch,
                                          capsys, tmp_path):
    """``--model`` takes what ``from_pretrained`` does: a converted
    ELMoForManyLangs folder, a PaddleNLP ``.pdparams`` (converted into the
    cache). Nightly: both scripts pass ``--model`` to ``from_pretrained``
    alone, whose reading of those models the default run checks."""
    import pathlib

    monkeypatch.setenv("BILM_KERAS_CACHE", str(tmp_path))
    folder = pathlib.Path(manylangs_converted["options_file"]).parent
    result = classifier.main([
        "--model", str(folder),
        "--train", _first_lines(DOCS / "order_train.tsv", 120, tmp_path),
        "--test", _first_lines(DOCS / "order_test.tsv", 40, tmp_path),
        "--epochs", "2", "--no_baseline"])
    assert capsys.readouterr().out.splitlines()[-1].startswith("RESULT ")
    assert result["n_test"] == 40 and len(result["loss"]) == 2
    pdparams = REPO_ROOT / "tests" / "fixtures" / "paddlenlp_elmo" / \
        "elmo.pdparams"
    result = tagger.main([
        "--model", str(pdparams), "--train",
        str(DOCS / "odd_train.conll"), "--test",  # 20 sentences:
        _first_lines(DOCS / "odd_test.conll", 249, tmp_path),
        "--epochs", "2", "--no_baseline",
        "--max_sentences", "40", "--word_emb_dim", "8",
        "--grnn_hidden_dim", "8"])
    assert capsys.readouterr().out.splitlines()[-1].startswith("RESULT ")
    assert result["n_test"] == 20 and len(result["mix_weights"]) == 3


# --------------------------------------------------------------------- CRF
def _brute_force(emissions, transitions):
    """Every tag path of one sentence with its score, enumerated."""
    import itertools

    import numpy as np

    start, end, trans = transitions[0], transitions[1], transitions[2:]
    n, k = emissions.shape
    paths = list(itertools.product(range(k), repeat=n))
    scores = np.array([
        start[p[0]] + end[p[-1]] + sum(emissions[t, p[t]] for t in range(n))
        + sum(trans[p[t - 1], p[t]] for t in range(1, n)) for p in paths])
    return paths, scores


def test_crf_log_likelihood_against_every_path(tagger):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    k, width = 3, 4
    emissions = rng.normal(size=(3, width, k)).astype(np.float32)
    transitions = rng.normal(size=(k + 2, k)).astype(np.float32)
    lengths = np.array([4, 2, 1])
    tags = rng.integers(0, k, size=(3, width))
    got = tagger.crf_log_likelihood(
        tf.constant(emissions), tf.constant(tags), tf.constant(lengths),
        tf.constant(transitions)).numpy()
    for i, n in enumerate(lengths):
        paths, scores = _brute_force(emissions[i, :n], transitions)
        log_z = np.log(np.exp(scores - scores.max()).sum()) + scores.max()
        want = scores[paths.index(tuple(tags[i, :n]))] - log_z
        assert got[i] == pytest.approx(want, abs=1e-4)


def test_viterbi_against_every_path(tagger):
    import numpy as np

    rng = np.random.default_rng(1)
    for n in (1, 2, 5):
        emissions = rng.normal(size=(n, 3))
        transitions = rng.normal(size=(5, 3))
        paths, scores = _brute_force(emissions, transitions)
        assert tuple(tagger.viterbi(emissions, transitions)) == paths[
            int(scores.argmax())]


@pytest.mark.nightly
@pytest.mark.slow
def test_lac_tagger_with_a_crf(tagger, bilm_fixtures, monkeypatch, capsys):
    result = _run(tagger, [
        "--train", str(DOCS / "odd_train.conll"),
        "--test", str(DOCS / "odd_test.conll"), "--epochs", "12",
        "--learning_rate", "0.01", "--word_emb_dim", "16",
        "--grnn_hidden_dim", "16", "--max_sentences", "80", "--crf",
        "--no_baseline"],
        bilm_fixtures, monkeypatch, capsys)
    assert result["crf"] is True
    # the mean negative log-likelihood of a batch; batches of similar
    # lengths, so a batch of long sentences weighs as much as a short one's
    loss = result["loss"]
    assert loss[-1] < 0.5 * loss[0], loss
    assert 0 <= result["test"]["f1"] <= 1


# ------------------------------------------ what ELMo adds, as documented
@pytest.mark.slow
@pytest.mark.nightly
def test_sentence_classifier_reads_word_order(classifier, docstring_bilm,
                                              capsys):
    """The documented command on natural vs shuffled sentences: both
    labels have the same words, so the words-only baseline stays near
    chance (0.5) and ELMo, whose vectors depend on the order, does not.
    Measured on the AVX2 EPYC, 2026-11-29, with the demo's own three
    epochs, seeds 0, 1, 2: ELMo 0.725, 0.700, 0.725, words only 0.505,
    0.460, 0.430. With one epoch (heldout perplexity 169) the margin was
    thin: ELMo 0.585, 0.710, 0.635 against 0.480, 0.500, 0.505, and 0.535
    against 0.515 in one fresh clone's run, below the thresholds."""
    result = classifier.main([
        "--model", str(docstring_bilm),
        "--train", str(DOCS / "order_train.tsv"),
        "--test", str(DOCS / "order_test.tsv")])
    assert capsys.readouterr().out.splitlines()[-1].startswith("RESULT ")
    assert result["n_test"] == 200
    elmo, words = (result["test_accuracy"],
                   result["words_only"]["test_accuracy"])
    assert elmo >= 0.5 + CLASSIFIER_ABOVE_CHANCE, (elmo, words)
    assert elmo >= words + CLASSIFIER_MARGIN, (elmo, words)


@pytest.mark.slow
@pytest.mark.nightly
def test_lac_tagger_finds_the_replaced_tokens(tagger, docstring_bilm,
                                              capsys):
    """The documented command on replaced-token detection: two tokens of
    each held-out sentence are replaced by words drawn as often as they
    occur, so only their neighbours give them away. Two random guesses a
    sentence (but the last token) score span F1 0.21, tagging every such
    token 0.29. Both taggers read the neighbours, the baseline through its
    own BiGRU trained on 400 sentences, ELMo through the biLM too, which
    learnt from its whole corpus which words follow which. Measured on
    the AVX2 EPYC, 2026-11-29, with the demo's own three epochs, seeds 0,
    1, 2: ELMo 0.278, 0.296, 0.294, words only 0.210, 0.254, 0.227."""
    result = tagger.main([
        "--model", str(docstring_bilm),
        "--train", str(DOCS / "odd_train.conll"),
        "--test", str(DOCS / "odd_test.conll"), "--word_emb_dim", "16",
        "--grnn_hidden_dim", "32", "--bigru_num", "1",
        "--learning_rate", "0.005"])
    assert capsys.readouterr().out.splitlines()[-1].startswith("RESULT ")
    assert result["test"]["gold_spans"] == 400
    elmo, words = result["test"]["f1"], result["words_only"]["test"]["f1"]
    assert elmo >= TAGGER_ABOVE_CHANCE, (elmo, words)
    assert elmo >= words + TAGGER_MARGIN, (elmo, words)
