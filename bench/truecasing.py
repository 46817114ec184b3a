"""Truecasing with and without ELMo: held-out F1 on another source's text.

Truecasing restores each token's capitalisation from lowercased text. Its
labels are what people wrote, and many need context: a sentence's first
word, a name that is also a word ("Python", "Debian"), an acronym
("HTTP"). Each token gets one of four classes (Lita et al. 2003): lower,
title ("Python"), upper ("HTTP") or mixed ("TextIOWrapper").

The run, in one ``--workdir`` (each phase reuses what an earlier run of
the same workdir left):

1. **Corpus.** ``--corpus``: a folder of reStructuredText sources, such as
   the Python documentation that Debian's ``python3.11-doc`` installs in
   ``/usr/share/doc/python3.11/html/_sources`` (PSF License). Its prose
   is split into sentences and tokenized with the cased tokenizer of
   :mod:`bilm_keras.data.stdlib_corpus`. ``--heldout``: a plain-text
   file (``.gz`` read as such) from another source, such as Debian's
   ``debian-reference-en`` (``/usr/share/debian-reference/
   debian-reference.en.txt.gz``, GPL-2+). The corpus gives the task's
   labelled training sentences, an in-domain test set and, lowercased,
   the biLM's training text (the in-domain test sentences left out).
2. **biLM.** ``bilm-keras train`` on the lowercased corpus with a small
   model (:data:`LM_OPTIONS`), stopped by SIGTERM after
   ``--lm_minutes`` (the run writes its checkpoint first), then
   ``bilm-keras dump-weights``.
3. **Task.** The frozen biLM embeds every task sentence once, all its
   layers. Three taggers train on the same sentences, each the task's own
   word embeddings, a BiLSTM and a softmax over the four classes: alone,
   with ELMo's layer 0 (the char-CNN) concatenated, and with the learned
   mix of all layers concatenated (``ScalarMix``: softmax weights and a
   scale gamma, Peters et al. 2018, eq. 1). Each runs with ``--seeds``.

F1 counts the capitalised classes: a token is a true positive when its
gold class is not ``lower`` and the prediction equals it. It is reported
over all tokens and without each sentence's first token (which a
lowercased sentence's position alone gives away).

Usage::

    nice -n 10 python bench/truecasing.py --workdir /tmp/truecasing \\
        --corpus /usr/share/doc/python3.11/html/_sources \\
        --heldout /usr/share/debian-reference/debian-reference.en.txt.gz
    python bench/truecasing.py --quick --workdir /tmp/tc_quick   # smoke

``--quick`` reads the small committed sample in ``tests/fixtures/
truecasing/`` (unless ``--corpus`` and ``--heldout`` are given), trains a
tiny biLM for a few steps and the taggers for one epoch: a check of the
script, not a result. Prints ONE JSON line: the data, the biLM (size,
steps, perplexity, minutes) and per tagger the F1s by seed, their means
and, for the mix, the learned weights.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time

import common

CLASSES = ("lower", "title", "upper", "mixed")

#: the biLM the full run trains: 2 layers of 512 LSTM cells projected to
#: 128, a 384-filter char-CNN and one highway layer (2.74 M parameters
#: without the softmax)
LM_OPTIONS = {
    "lstm": {
        "dim": 512, "projection_dim": 128, "n_layers": 2,
        "cell_clip": 3, "proj_clip": 3, "use_skip_connections": True,
    },
    "char_cnn": {
        "embedding": {"dim": 16},
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 128]],
        "n_highway": 1, "n_characters": 261,
        "max_characters_per_token": 50, "activation": "relu",
    },
    "bidirectional": True,
    "dropout": 0.1,
    "unroll_steps": 20,
    "batch_size": 32,
    "n_epochs": 50,
    "n_negative_samples_batch": 512,
    "all_clip_norm_val": 10.0,
}

#: the quick run's biLM
QUICK_LM_OPTIONS = dict(
    LM_OPTIONS,
    lstm=dict(LM_OPTIONS["lstm"], dim=32, projection_dim=16),
    char_cnn=dict(LM_OPTIONS["char_cnn"], embedding={"dim": 4},
                  filters=[[1, 8], [2, 8], [3, 16]]),
    batch_size=8, n_negative_samples_batch=64)

QUICK_SAMPLE_DIR = os.path.join(common.REPO_ROOT, "tests", "fixtures",
                                "truecasing")


# ------------------------------------------------------------------ corpus
# inline reST: :role:`text`, ``literal``, `link <url>`_, *emphasis*
_ROLE = re.compile(r":[a-z:]+:`([^`]*)`")
_LITERAL = re.compile(r"``([^`]*)``")
_LINK = re.compile(r"`([^`<]*?)\s*(<[^>]*>)?`_{1,2}")
_EMPHASIS = re.compile(r"\*{1,2}([^*\s][^*]*?)\*{1,2}")
_SUBSTITUTION = re.compile(r"\|[^|\s]+\|")


def _role_text(match) -> str:
    """What a role shows: ``title <target>`` shows title, ``~a.b.c``
    shows c, ``!x`` shows x."""
    text = match.group(1)
    titled = re.fullmatch(r"(.*?)\s*<[^>]*>", text)
    if titled:
        return titled.group(1)
    text = text.lstrip("!")
    if text.startswith("~"):
        return text.rsplit(".", 1)[-1]
    return text


def strip_inline_markup(text: str) -> str:
    """reST inline markup replaced by the text it shows."""
    text = _ROLE.sub(_role_text, text)
    text = _LITERAL.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    return _SUBSTITUTION.sub("", text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def prose_paragraphs(text: str, rest: bool) -> list:
    """The paragraphs of a document as one line each, without literal
    blocks, directives, tables or headings.

    Args:
        text: str. The document.
        rest: bool. Whether it is reStructuredText: a paragraph ending in
            ``::`` starts a literal block (the deeper-indented paragraphs
            after it), ``..`` lines are directives or comments.
    """
    paragraphs = []
    literal_indent = None  # inside a literal block deeper than this
    for block in re.split(r"\n[ \t]*\n", text):
        lines = [line.rstrip() for line in block.splitlines()
                 if line.strip()]
        if not lines:
            continue
        indent = _indent(lines[0])
        if literal_indent is not None:
            if indent > literal_indent:
                continue
            literal_indent = None
        if rest:
            # a directive's own line; its indented content comes after
            lines = [line for line in lines
                     if not line.lstrip().startswith(".. ")]
            if not lines:
                continue
            if lines[-1].endswith("::"):
                literal_indent = _indent(lines[-1])
        if any(re.match(r"\s*([-=~^*+#|]{3,}|\+-|\||>>>|\$ |# )", line)
               for line in lines):
            continue  # headings, tables, prompts
        paragraphs.append(" ".join(line.strip() for line in lines))
    return paragraphs


def document_sentences(text: str, rest: bool) -> list:
    """The prose sentences of a document, each a list of its cased
    tokens: paragraphs split at sentence ends, kept when
    :func:`~bilm_keras.data.stdlib_corpus.tokenize` takes them (4 to 40
    tokens, a capital first, an end mark last, mostly words, no code)."""
    from bilm_keras.data.stdlib_corpus import _SENTENCE_END, tokenize

    sentences = []
    for paragraph in prose_paragraphs(text, rest):
        if rest:
            paragraph = strip_inline_markup(paragraph)
        paragraph = paragraph.rstrip(":") + ("." if paragraph.endswith(
            "::") else "")
        for raw in _SENTENCE_END.split(paragraph):
            tokens = tokenize(raw.strip(), lowercase=False)
            if tokens is not None:
                sentences.append(tokens)
    return sentences


def _read_text(path: str) -> str:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def read_rest_folder(folder: str) -> list:
    """The distinct sentences of every ``*.rst.txt`` or ``*.rst`` file
    under ``folder``, files in sorted path order."""
    paths = sorted(
        os.path.join(root, name)
        for root, _, names in os.walk(folder) for name in names
        if name.endswith((".rst.txt", ".rst")))
    if not paths:
        raise FileNotFoundError(
            f"--corpus {folder}: expected reStructuredText files "
            "(*.rst.txt or *.rst), found none")
    return _distinct(s for path in paths
                     for s in document_sentences(_read_text(path), True))


def read_plain_text(path: str) -> list:
    """The distinct sentences of a plain-text file (``.gz`` read as
    gzip)."""
    return _distinct(document_sentences(_read_text(path), False))


def _distinct(sentences) -> list:
    seen, out = set(), []
    for tokens in sentences:
        key = " ".join(tokens)
        if key not in seen:
            seen.add(key)
            out.append(tokens)
    return out


def case_class(token: str) -> int:
    """The index in :data:`CLASSES` of a token's capitalisation."""
    letters = [ch for ch in token if ch.isalpha()]
    if not any(ch.isupper() for ch in letters):
        return 0
    if letters[0].isupper() and not any(ch.isupper() for ch in letters[1:]):
        return 1
    if len(letters) > 1 and all(ch.isupper() for ch in letters):
        return 2
    return 3


def prepare(workdir: str, corpus: str, heldout: str, *, n_task_train: int,
            n_test: int, seed: int = 0) -> dict:
    """Writes ``workdir/data.json`` (the task's sentences, cased) and the
    biLM's lowercased corpus and vocabulary, and returns the counts. A
    ``data.json`` already there is read back instead."""
    data_file = os.path.join(workdir, "data.json")
    if os.path.exists(data_file):
        with open(data_file, encoding="utf-8") as f:
            return json.load(f)["counts"]
    docs = read_rest_folder(corpus)
    other = read_plain_text(heldout)
    rng = random.Random(seed)
    rng.shuffle(docs)
    rng.shuffle(other)
    if len(docs) < n_task_train + n_test + 10 or len(other) < 10:
        raise ValueError(
            f"--corpus {corpus}: {len(docs)} sentences, --heldout "
            f"{heldout}: {len(other)}, expected at least "
            f"{n_task_train + n_test + 10} and 10")
    test_in, train = docs[:n_test], docs[n_test:n_test + n_task_train]
    lm_sentences = docs[n_test:]  # the in-domain test set left out
    test_out = other
    os.makedirs(os.path.join(workdir, "lm_corpus"), exist_ok=True)
    with open(os.path.join(workdir, "lm_corpus", "docs.txt"), "w",
              encoding="utf-8") as f:
        for tokens in lm_sentences:
            f.write(" ".join(tokens).lower() + "\n")
    counts = collections.Counter(t.lower() for s in lm_sentences for t in s)
    vocab = [w for w, c in counts.most_common() if c >= 2][:30000]
    with open(os.path.join(workdir, "vocab.txt"), "w",
              encoding="utf-8") as f:
        f.write("".join(w + "\n" for w in ["<S>", "</S>", "<UNK>"] + vocab))
    summary = dict(
        lm_sentences=len(lm_sentences),
        lm_tokens=sum(len(s) for s in lm_sentences),
        lm_vocab=len(vocab) + 3,
        task_train_sentences=len(train),
        task_train_tokens=sum(len(s) for s in train),
        test_in_domain_sentences=len(test_in),
        test_heldout_sentences=len(test_out),
        test_heldout_tokens=sum(len(s) for s in test_out),
        heldout_class_counts=dict(zip(CLASSES, [
            sum(case_class(t) == k for s in test_out for t in s)
            for k in range(len(CLASSES))])))
    with open(data_file + ".tmp", "w", encoding="utf-8") as f:
        json.dump(dict(counts=summary, train=train, test_in_domain=test_in,
                       test_heldout=test_out), f)
    os.replace(data_file + ".tmp", data_file)
    return summary


# -------------------------------------------------------------------- biLM
def train_lm(workdir: str, options: dict, *, minutes: float,
             max_steps: int | None = None) -> dict:
    """``bilm-keras train`` on the lowercased corpus until ``minutes``
    have passed (then SIGTERM: the run writes a checkpoint and stops) or
    ``max_steps``, then ``bilm-keras dump-weights``. Returns what the run
    reports. A ``workdir/lm/report.json`` already there is read back
    instead."""
    lm_dir = os.path.join(workdir, "lm")
    report_file = os.path.join(lm_dir, "report.json")
    if os.path.exists(report_file):
        with open(report_file) as f:
            return json.load(f)
    os.makedirs(lm_dir, exist_ok=True)
    options_file = os.path.join(lm_dir, "train_options.json")
    with open(options_file, "w") as f:
        json.dump(options, f)
    save_dir = os.path.join(lm_dir, "save_dir")
    argv = [sys.executable, "-m", "bilm_keras.cli", "train",
            "--options", options_file, "--save_dir", save_dir,
            "--vocab_file", os.path.join(workdir, "vocab.txt"),
            "--train_prefix", os.path.join(workdir, "lm_corpus", "*.txt"),
            "--seed", "0", "--log_every", "50", "--save_every", "500"]
    if max_steps is not None:
        argv += ["--max_steps", str(max_steps)]
    log_file = os.path.join(lm_dir, "train.log")
    start = time.perf_counter()
    with open(log_file, "w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                env=dict(os.environ, **common.TF_CHILD_ENV))
        try:
            proc.wait(timeout=minutes * 60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)  # checkpoint, then stop
            proc.wait()
    seconds = time.perf_counter() - start
    with open(log_file) as f:
        log_text = f.read()
    if proc.returncode not in (0, 143):
        raise RuntimeError(f"bilm-keras train failed ({proc.returncode}):\n"
                           f"{log_text[-3000:]}")
    weight_file = os.path.join(lm_dir, "lm_weights.hdf5")
    subprocess.run([sys.executable, "-m", "bilm_keras.cli", "dump-weights",
                    "--save_dir", save_dir, "--outfile", weight_file],
                   check=True, capture_output=True,
                   env=dict(os.environ, **common.TF_CHILD_ENV))
    report = dict(minutes=round(seconds / 60, 1), **_last_progress(log_text),
                  parameters=_parameters(weight_file), stopped_by=(
                      "time" if proc.returncode == 143 else "steps"))
    with open(report_file, "w") as f:
        json.dump(report, f)
    return report


def _last_progress(log_text: str) -> dict:
    """The step and train perplexity of the last progress line."""
    steps = re.findall(r"step[ =:]*(\d+)", log_text)
    perplexities = re.findall(r"perplexity[ =:]*([0-9.]+)", log_text)
    return dict(steps=int(steps[-1]) if steps else None,
                train_perplexity=(float(perplexities[-1].rstrip("."))
                                  if perplexities else None))


def _parameters(weight_file: str) -> int:
    """The number of weights in a bilm-tf HDF5 file (the biLM without its
    softmax)."""
    import h5py

    sizes = []
    with h5py.File(weight_file, "r") as f:
        f.visititems(lambda _, obj: sizes.append(obj.size)
                     if isinstance(obj, h5py.Dataset) else None)
    return sum(sizes)


# -------------------------------------------------------------------- task
#: the taggers compared: what each concatenates to its word embeddings
TAGGERS = ("words", "words+elmo_layer0", "words+elmo_mix")


def word_ids(sentences, vocabulary: dict) -> list:
    """Lowercased tokens as ids: 0 padding, 1 unknown, 2... the
    vocabulary's."""
    return [[vocabulary.get(t.lower(), 1) for t in s] for s in sentences]


def padded(rows, width, dtype):
    import numpy as np

    out = np.zeros((len(rows), width), dtype)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


def lm_features(bilm, sentences, width: int):
    """Every biLM layer of each lowercased sentence, zero-padded:
    `(sentences, L + 1, width, 2P)` float32."""
    import numpy as np

    arrays = bilm.embed_sentences([[t.lower() for t in s]
                                   for s in sentences], output="all")
    n_layers, _, dim = arrays[0].shape
    out = np.zeros((len(sentences), n_layers, width, dim), np.float32)
    for i, a in enumerate(arrays):
        out[i, :, :a.shape[1]] = a
    return out


def build_tagger(kind: str, n_words: int, n_lm_layers: int, lm_dim: int, *,
                 word_dim: int, lstm_units: int, dropout: float):
    """One tagger: word embeddings, with ELMo's layer 0 or its learned mix
    for ``kind`` beside them, a BiLSTM and a softmax over
    :data:`CLASSES`. Inputs ``words`` `(batch, time)` int32 and ``lm``
    `(batch, L + 1, time, 2P)`. Returns ``(model, mix or None)``."""
    import keras

    from bilm_keras.layers.scalar_mix import ScalarMix

    words = keras.Input(shape=(None,), dtype="int32", name="words")
    lm = keras.Input(shape=(n_lm_layers, None, lm_dim), name="lm")
    x = keras.layers.Embedding(n_words, word_dim, mask_zero=True,
                               name="word_emb")(words)  # (B, T, E)
    mix = None
    if kind != "words":
        if kind == "words+elmo_layer0":
            elmo = keras.layers.Lambda(lambda t: t[:, 0],
                                       name="layer0")(lm)  # (B, T, 2P)
        else:
            mix = ScalarMix(n_lm_layers, name="scalar_mix")
            elmo = mix(lm, keras.ops.not_equal(words, 0))  # (B, T, 2P)
        elmo = keras.layers.Dropout(dropout)(elmo)
        x = keras.layers.Concatenate()([x, elmo])  # keeps the words' mask
    x = keras.layers.Bidirectional(keras.layers.LSTM(
        lstm_units, return_sequences=True))(x)  # (B, T, 2U)
    x = keras.layers.Dropout(dropout)(x)
    probs = keras.layers.Dense(len(CLASSES), activation="softmax")(x)
    return keras.Model({"words": words, "lm": lm}, probs), mix


def f1_scores(gold, predicted, lengths) -> dict:
    """F1 of the capitalised classes over all tokens and without each
    sentence's first, the accuracy, and each class's F1 over all
    tokens."""
    import numpy as np

    positions = np.arange(gold.shape[1])[None, :]
    real = positions < lengths[:, None]
    report = {}
    for name, keep in (("f1", real), ("f1_not_first", real & (
            positions > 0))):
        right = ((predicted == gold) & (gold > 0) & keep).sum()
        n_pred = ((predicted > 0) & keep).sum()
        n_gold = ((gold > 0) & keep).sum()
        report[name] = _f1(right, n_pred, n_gold)
    report["accuracy"] = round(float(((predicted == gold) & real).sum()
                                     / real.sum()), 4)
    for k in range(1, len(CLASSES)):
        right = ((predicted == k) & (gold == k) & real).sum()
        report[f"f1_{CLASSES[k]}"] = _f1(
            right, ((predicted == k) & real).sum(),
            ((gold == k) & real).sum())
    return report


def _f1(right, n_predicted, n_gold) -> float:
    precision = right / n_predicted if n_predicted else 0.0
    recall = right / n_gold if n_gold else 0.0
    return round(float(2 * precision * recall / (precision + recall))
                 if precision + recall else 0.0, 4)


def run_task(workdir: str, *, seeds, epochs: int, batch_size: int,
             word_dim: int, lstm_units: int, dropout: float,
             min_word_count: int) -> dict:
    """Embeds the task's sentences with the biLM of ``workdir/lm`` and
    trains and scores each of :data:`TAGGERS` with each seed."""
    import keras
    import numpy as np

    from bilm_keras import BidirectionalLanguageModel

    with open(os.path.join(workdir, "data.json"), encoding="utf-8") as f:
        data = json.load(f)
    lm_dir = os.path.join(workdir, "lm")
    bilm = BidirectionalLanguageModel(os.path.join(lm_dir, "options.json"),
                                      os.path.join(lm_dir,
                                                   "lm_weights.hdf5"))
    counts = collections.Counter(t.lower() for s in data["train"] for t in s)
    vocabulary = {w: i + 2 for i, w in enumerate(
        sorted(w for w, c in counts.items() if c >= min_word_count))}
    sets = {}
    start = time.perf_counter()
    for name in ("train", "test_in_domain", "test_heldout"):
        sentences = data[name]
        width = max(len(s) for s in sentences)
        sets[name] = dict(
            words=padded(word_ids(sentences, vocabulary), width, np.int32),
            lm=lm_features(bilm, sentences, width),
            gold=padded([[case_class(t) for t in s] for s in sentences],
                        width, np.int32),
            lengths=np.array([len(s) for s in sentences]))
    embed_seconds = time.perf_counter() - start
    n_lm_layers, lm_dim = sets["train"]["lm"].shape[1::2]
    heldout_oov = float(np.mean([
        vocabulary.get(t.lower()) is None
        for s in data["test_heldout"] for t in s]))
    train = sets["train"]
    weights = (train["words"] > 0).astype(np.float32)
    results = {}
    for kind in TAGGERS:
        runs = []
        for seed in seeds:
            keras.utils.set_random_seed(seed)
            model, mix = build_tagger(
                kind, len(vocabulary) + 2, n_lm_layers, lm_dim,
                word_dim=word_dim, lstm_units=lstm_units, dropout=dropout)
            model.compile(keras.optimizers.Adam(1e-3),
                          "sparse_categorical_crossentropy")
            model.fit({"words": train["words"], "lm": train["lm"]},
                      train["gold"], sample_weight=weights,
                      batch_size=batch_size, epochs=epochs, verbose=0)
            scores = {}
            for name in ("test_in_domain", "test_heldout"):
                s = sets[name]
                probs = model.predict({"words": s["words"], "lm": s["lm"]},
                                      batch_size=256, verbose=0)
                scores[name] = f1_scores(s["gold"], probs.argmax(-1),
                                         s["lengths"])
            if mix is not None:
                scores["mix_weights"] = [
                    round(float(w), 4)
                    for w in mix.normalized_weights().numpy()]
                scores["mix_gamma"] = round(float(mix.gamma.numpy()[0]), 4)
            runs.append(dict(seed=seed, **scores))
            print(f"{kind} seed {seed}: held-out F1 "
                  f"{scores['test_heldout']['f1']:.4f}", file=sys.stderr,
                  flush=True)  # progress; stdout keeps the one JSON line
        results[kind] = dict(runs=runs, **_means(runs))
    return dict(taggers=results, embed_seconds=round(embed_seconds, 1),
                task_vocabulary=len(vocabulary) + 2,
                heldout_oov_rate=round(heldout_oov, 4),
                lm_layers=int(n_lm_layers), lm_dim=int(lm_dim))


def _means(runs) -> dict:
    """The mean over seeds of each score."""
    means = {}
    for name in ("test_in_domain", "test_heldout"):
        means[f"{name}_mean"] = {
            key: round(statistics.mean(r[name][key] for r in runs), 4)
            for key in runs[0][name]}
    return means


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", required=True,
                        help="keeps the data, the biLM and its log, "
                        "which a second run reuses")
    parser.add_argument("--corpus", default=None,
                        help="a folder of reST files (the Python docs' "
                        "_sources)")
    parser.add_argument("--heldout", default=None,
                        help="a plain-text file (.gz too) of another "
                        "source")
    parser.add_argument("--quick", action="store_true",
                        help="tiny biLM, the committed sample: a smoke "
                        "check")
    parser.add_argument("--lm_minutes", type=float, default=25.0)
    parser.add_argument("--n_task_train", type=int, default=3000)
    parser.add_argument("--n_test", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args(argv)
    if args.quick:
        corpus = args.corpus or os.path.join(QUICK_SAMPLE_DIR, "rst")
        heldout = args.heldout or os.path.join(QUICK_SAMPLE_DIR,
                                               "heldout.txt")
        n_task_train, n_test = 60, 30
    else:
        if not (args.corpus and args.heldout):
            parser.error("--corpus and --heldout are required (or "
                         "--quick)")
        corpus, heldout = args.corpus, args.heldout
        n_task_train, n_test = args.n_task_train, args.n_test
    os.makedirs(args.workdir, exist_ok=True)
    data = prepare(args.workdir, corpus, heldout, n_task_train=n_task_train,
                   n_test=n_test)
    lm = train_lm(args.workdir,
                  QUICK_LM_OPTIONS if args.quick else LM_OPTIONS,
                  minutes=args.lm_minutes,
                  max_steps=5 if args.quick else None)
    task = run_task(args.workdir, seeds=list(range(
        1 if args.quick else args.seeds)),
        epochs=1 if args.quick else args.epochs, batch_size=32,
        word_dim=16 if args.quick else 100,
        lstm_units=8 if args.quick else 100, dropout=0.25,
        min_word_count=1 if args.quick else 2)
    print(json.dumps(dict(
        machine=common.machine(), corpus=os.path.abspath(corpus),
        heldout=os.path.abspath(heldout), data=data, lm=lm, **task)))


if __name__ == "__main__":
    main()
