"""What the benchmark scripts share: the corpus, the models they write,
their child processes, medians, memory and the machine's matmul peak.

Every script in ``bench/`` is run from the repository root as ``python
bench/NAME.py``; Python puts the script's folder first on ``sys.path``, so
a script imports this module as ``import common`` and another script's
pieces as ``import train_throughput`` (the tests put ``bench/`` on the
path through ``setup.cfg``). ``bilm_keras`` is whatever ``import
bilm_keras`` finds: this checkout, installed editable by the README's
first command (``compare_revisions.py`` puts the tree it runs first on
``PYTHONPATH``); child processes inherit the environment, so they import
the same package.

The standard library only at import time: a script runs its own file as a
child in another venv too (``embed_vs_allennlp.py`` in AllenNLP's), and
that child imports this module. numpy, TensorFlow and the package are
imported inside the functions that need them.

``python bench/common.py write-model OPTIONS_JSON WEIGHTS_HDF5`` writes
random weights for an options file (:func:`write_model` runs it as a
child, so that the measuring process's memory is its own).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)


def preset_file(name: str) -> str:
    """The options preset ``name`` (``"small.json"``) of this checkout, in
    the top-level ``options/`` (the one definition of each in the
    repository; the wheel ships it as package data). A path, so that the
    AllenNLP child (another venv, without our package) reads it too."""
    path = os.path.join(REPO_ROOT, "options", name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no options preset {name!r} in "
                                f"{os.path.dirname(path)}")
    return path


#: the published model's options (``elmo_2x4096_512_2048cnn_2xhighway``)
#: and the small preset
PUBLISHED_OPTIONS_FILE = preset_file("elmo_2x4096_512_2048cnn_2xhighway.json")
SMALL_OPTIONS_FILE = preset_file("small.json")

#: the benchmarks' tiny embedding model (``--quick``; ``embed_at_scale.py``)
QUICK_OPTIONS = {
    "lstm": {
        "dim": 64, "projection_dim": 16, "n_layers": 2,
        "cell_clip": 3, "proj_clip": 3, "use_skip_connections": True,
    },
    "char_cnn": {
        "embedding": {"dim": 4},
        "filters": [[1, 4], [2, 8], [3, 8]],
        "n_highway": 1, "n_characters": 262,
        "max_characters_per_token": 50, "activation": "relu",
    },
    "bidirectional": True,
    "dropout": 0.1,
    "n_tokens_vocab": 1000,
    "unroll_steps": 20,
    "n_negative_samples_batch": 64,
    "all_clip_norm_val": 10.0,
}

#: what every child that imports TensorFlow gets in its environment
TF_CHILD_ENV = {"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"}

#: names the interpreter of the untimed helper children (the random
#: weights :func:`write_model` writes): the tests' smoke runs point it at
#: a child forked from their command server (``tests/command_server.py``),
#: which spares each a TensorFlow import; the timed children stay fresh
HELPER_PYTHON_VARIABLE = "BENCH_HELPER_PYTHON"


def helper_python() -> str:
    """The interpreter of an untimed helper child: ``sys.executable``
    unless :data:`HELPER_PYTHON_VARIABLE` names another."""
    return os.environ.get(HELPER_PYTHON_VARIABLE) or sys.executable


def checkout_child_env(**updates) -> dict:
    """:data:`TF_CHILD_ENV` with this checkout first on ``PYTHONPATH`` (a
    child that imports bilm_keras from it whatever is installed), and
    ``updates``."""
    path = os.pathsep.join(
        p for p in (REPO_ROOT, os.environ.get("PYTHONPATH")) if p)
    return dict(TF_CHILD_ENV, PYTHONPATH=path, **updates)


# ------------------------------------------------------------------ corpus
def make_corpus(n_sentences=256, min_len=5, max_len=40, mean_len=25.0,
                n_words=20000, seed=1234):
    """Deterministic sentences with Zipfian word frequencies (the
    embedding benchmarks' corpus: 256 sentences, 6,297 tokens, 2,281
    distinct by default).

    Lengths: normal(mean_len, 9) rounded and clipped to [min_len, max_len].
    Words: ``n_words`` random lower-case strings of 1-12 letters drawn
    with probability proportional to 1 / rank (as in running text, so short
    frequent words repeat).
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    word_lens = np.clip(rng.poisson(5, n_words), 1, 12)
    words = ["".join(rng.choice(letters, n)) for n in word_lens]
    p = 1.0 / np.arange(1, n_words + 1)
    p /= p.sum()
    lengths = np.clip(np.rint(rng.normal(mean_len, 9.0, n_sentences)),
                      min_len, max_len).astype(int)
    return [[words[i] for i in rng.choice(n_words, n, p=p)]
            for n in lengths]


def write_corpus_file(path: str, n_sentences: int, seed: int = 1234) -> int:
    """:func:`make_corpus` as a text file, one sentence a line; returns its
    number of tokens."""
    sentences = make_corpus(n_sentences=n_sentences, seed=seed)
    with open(path, "w", encoding="utf-8") as f:
        for sentence in sentences:
            f.write(" ".join(sentence) + "\n")
    return sum(len(s) for s in sentences)


# ------------------------------------------------------------------ models
def write_random_weights(options_file: str, weight_file: str) -> None:
    """Random weights (seed 0) for ``options_file``, in bilm-tf's HDF5
    layout, written in this process: a randomly initialised
    :class:`~bilm_keras.BiLMBackbone` saved with
    :func:`~bilm_keras.weights.save_bilm_tf_hdf5`."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    from bilm_keras import BiLMBackbone, BiLMOptions
    from bilm_keras.weights import save_bilm_tf_hdf5

    keras.utils.set_random_seed(0)
    backbone = BiLMBackbone.from_options(BiLMOptions.from_json(options_file),
                                         name="bilm").build_all()
    save_bilm_tf_hdf5(backbone, weight_file)


def write_model(folder: str, options, weight_name: str = "weights.hdf5"
                ) -> tuple[str, str]:
    """``folder/options.json`` (``options``: a dict, or the path of an
    options file to copy) and random weights for it, written by a child
    process (so that the measuring process loads them through the real
    loader and its memory is its own). Returns ``(options_file,
    weight_file)``."""
    os.makedirs(folder, exist_ok=True)
    options_file = os.path.join(folder, "options.json")
    if not isinstance(options, dict):
        with open(options) as f:
            options = json.load(f)
    with open(options_file, "w") as f:
        json.dump(options, f)
    weight_file = os.path.join(folder, weight_name)
    run_json_child([os.path.abspath(__file__), "write-model", options_file,
                    weight_file], TF_CHILD_ENV, python=helper_python())
    return options_file, weight_file


def write_bench_model(workdir: str, quick: bool) -> None:
    """The model an embedding bench measures, in ``workdir``: random
    weights of the quick (tiny) or the published shapes, written unless
    ``workdir`` holds one already (a ``--workdir`` reused)."""
    if not os.path.exists(os.path.join(workdir, "weights.hdf5")):
        write_model(workdir, QUICK_OPTIONS if quick
                    else PUBLISHED_OPTIONS_FILE)


def add_model_workdir_arguments(parser) -> None:
    """``--workdir`` (the model :func:`write_bench_model` writes, kept
    and reused) and the two hidden roles an embedding bench starts itself
    in: ``--_measure WORKDIR`` and ``--_as_user WORKDIR``."""
    parser.add_argument("--workdir", default=None,
                        help="reuse/keep options.json + weights.hdf5 here")
    parser.add_argument("--_measure", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_as_user", default=None, help=argparse.SUPPRESS)


def answer_child_role(args, measure, measure_as_user) -> bool:
    """In a child started with ``--_measure`` or ``--_as_user``: prints
    ``measure(workdir, args)``'s or ``measure_as_user(workdir, args)``'s
    report as one JSON line and returns True; in the parent, False."""
    if args._measure:
        print(json.dumps(measure(args._measure, args)))
    elif args._as_user:
        print(json.dumps(measure_as_user(args._as_user, args)))
    else:
        return False
    return True


# --------------------------------------------------------------- processes
def run_json_child(argv, env=None, python=sys.executable):
    """Runs ``python argv...`` (``argv[0]`` a script) with this process's
    environment updated by ``env``; returns its last line of output as
    JSON, or None when it printed nothing.

    Raises:
        RuntimeError: the child failed; the message ends with the last
            4,000 characters of its standard error.
    """
    proc = subprocess.run([python] + list(argv), capture_output=True,
                          text=True, env=dict(os.environ, **(env or {})))
    if proc.returncode != 0:
        name = " ".join([os.path.basename(python)] + list(argv[:2]))
        raise RuntimeError(f"{name} failed:\n{proc.stderr[-4000:]}")
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None


def cpu_model() -> str:
    """The ``model name`` of ``/proc/cpuinfo`` (``"unknown"`` without
    one): what ``lscpu | grep 'Model name'`` shows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def utc_now() -> str:
    """The date and time a figure is quoted with: ``2026-11-25 09:54
    UTC``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")


def machine() -> dict:
    """Where a figure was taken: ``date``, ``cpu``, ``cpu_count`` and the
    1-minute ``load_avg_1min``."""
    return dict(date=utc_now(), cpu=cpu_model(), cpu_count=os.cpu_count(),
                load_avg_1min=round(os.getloadavg()[0], 2))


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# ----------------------------------------------------------------- medians
def time_passes(fn, n: int) -> list:
    """Seconds of each of ``n`` calls of ``fn()``."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def embed_corpus(model, corpus, batch_size: int) -> None:
    """One pass of ``model.embed_sentences`` over ``corpus``, a vector
    list a sentence checked and dropped (what the throughput benches
    time)."""
    vectors = model.embed_sentences(corpus, batch_size=batch_size)
    assert len(vectors) == len(corpus)


def median_ratio(numerators, denominators) -> float:
    """The median of the per-round ratios ``numerators[i] /
    denominators[i]``: how every ratio in ``bench/`` is quoted (each round
    runs both sides under the same load of a shared machine)."""
    return statistics.median(a / b for a, b in zip(numerators, denominators))


# --------------------------------------- our reader vs the library's own
def time_calls(module, name: str, function) -> list:
    """Put ``function`` in ``module.name`` behind a stopwatch: the list
    this returns gets the seconds of each call (a conversion's reads timed
    inside it)."""
    seconds = []

    def timed(*args, **kwargs):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        seconds.append(time.perf_counter() - start)
        return result

    setattr(module, name, timed)
    return seconds


def alternating_rounds(names, rounds: int, run) -> dict:
    """``run(name)`` for each name, ``rounds`` times, in the given order in
    even rounds and reversed in odd ones (neither side always runs first
    on a warm or cold machine): name -> its results in round order."""
    runs = {name: [] for name in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            runs[name].append(run(name))
    return runs


def reader_summary(results, medians=("convert_s", "read_s"),
                   flags=("tensorflow_imported",)) -> dict:
    """One side's rounds in a report: the median of each of ``medians``,
    the rounds of convert_s / read_s, the peak memory of any round and
    each of ``flags`` true in any round."""
    summary = {key: statistics.median(x[key] for x in results)
               for key in medians}
    summary.update(
        convert_s_all=[round(x["convert_s"], 3) for x in results],
        read_s_all=[round(x["read_s"], 3) for x in results],
        peak_rss_mib=max(x["peak_rss_mib"] for x in results))
    summary.update({flag: any(x[flag] for x in results) for flag in flags})
    return summary


def ratios_over_ours(runs: dict, theirs: str) -> dict:
    """The library's reader (``runs[theirs]``) over ours
    (``runs["ours"]``), for convert_s and read_s: the median ratio and the
    ratio of each round."""
    report = {}
    for key in ("convert_s", "read_s"):
        slow = [t[key] for t in runs[theirs]]
        ours = [o[key] for o in runs["ours"]]
        report[f"{key}_ratio_{theirs}_over_ours"] = median_ratio(slow, ours)
        report[f"{key}_ratio_by_round"] = [
            round(t / o, 3) for t, o in zip(slow, ours)]
    return report


def same_hdf5_datasets(a: str, b: str) -> bool:
    """Whether two HDF5 files hold the same datasets: names, dtypes and
    values."""
    import h5py
    import numpy as np

    def datasets(f):
        names = []
        f.visit(lambda n: names.append(n)
                if isinstance(f[n], h5py.Dataset) else None)
        return sorted(names)

    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        names = datasets(fa)
        return names == datasets(fb) and all(
            fa[n].dtype == fb[n].dtype
            and np.array_equal(fa[n][...], fb[n][...]) for n in names)


# ------------------------------------------------------------------ memory
def peak_rss_mib() -> float:
    """This process's peak resident memory so far, MiB (``ru_maxrss``:
    KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def current_rss_mib() -> float | None:
    """This process's resident memory now, MiB (``/proc/self/statm``;
    None where there is no ``/proc``)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except OSError:
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class RSSPeak:
    """The peak resident memory above the start while a block runs:
    ``with RSSPeak() as p: ...`` then ``p.above_start_mib`` (None where
    :func:`current_rss_mib` cannot read it). A thread samples the RSS
    every ``interval`` seconds; a peak shorter than that can be missed.
    Portable where TensorFlow's allocator statistics are not (its CPU
    allocator has none in some builds)."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.above_start_mib = None

    def __enter__(self):
        self._start = current_rss_mib()
        self._peak = self._start
        self._done = threading.Event()
        if self._start is not None:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._done.is_set():
            self._peak = max(self._peak, current_rss_mib())
            self._done.wait(self.interval)

    def __exit__(self, *exc):
        self._done.set()
        if self._start is not None:
            self._thread.join()
            self._peak = max(self._peak, current_rss_mib())
            self.above_start_mib = self._peak - self._start
        return False


# ------------------------------------------------------------ matmul peak
def matmul_gflops(m: int, k: int, n: int, repeats: int = 5,
                  dtype: str = "float32") -> float:
    """The machine's ``(m, k) @ (k, n)`` rate in this process (operands
    and product in ``dtype``, float32 by default), in
    GFLOP/s (multiply-add = 2), with its oneDNN setting and thread pools
    as they are: the better of one product and one independent product
    per core at once (with one thread per op, as training's pools on 2
    cores, a single product uses one core), each the best of ``repeats``
    after a warm-up. The one way every script measures the peak it
    quotes fractions of."""
    import tensorflow as tf

    cores = available_cores()
    a = [tf.cast(tf.random.stateless_normal((m, k), seed=(0, i)), dtype)
         for i in range(cores)]
    b = tf.cast(tf.random.stateless_normal((k, n), seed=(1, 0)), dtype)
    one = tf.function(lambda x, y: tf.reduce_sum(
        tf.cast(tf.matmul(x, y), tf.float32)))
    each = tf.function(lambda xs, y: tf.add_n(
        [tf.reduce_sum(tf.cast(tf.matmul(x, y), tf.float32)) for x in xs]))
    rates = []
    for run, products in ((lambda: one(a[0], b), 1),
                          (lambda: each(a, b), cores)):
        float(run())  # trace, warm up
        best = min(time_passes(lambda run=run: float(run()), repeats))
        rates.append(products * 2 * m * k * n / best / 1e9)
    return max(rates)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "write-model":
        sys.exit("usage: python bench/common.py write-model OPTIONS_JSON "
                 "WEIGHTS_HDF5")
    write_random_weights(sys.argv[2], sys.argv[3])


def max_abs_diff_to_saved(check_file, embed, sentences):
    """The largest absolute difference between ``embed(sentences)`` (one
    array per sentence) and the arrays another implementation saved in
    ``check_file`` (``np.savez``, in sentence order); None when it saved
    none."""
    if not os.path.exists(check_file):
        return None
    import numpy as np

    theirs = np.load(check_file)
    return max(float(np.abs(o - theirs[f"arr_{k}"]).max())
               for k, o in enumerate(embed(sentences)))
