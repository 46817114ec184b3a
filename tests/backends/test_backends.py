"""The biLM under JAX and PyTorch equals TensorFlow: the layer, the
backbone of every family, one training step's gradients, ``fit`` and
``.keras`` files that cross backends.

TensorFlow (this process) writes each family's ``.keras`` file, its ids
and its outputs. Then one child process per backend
(``backend_checks.py``, ``KERAS_BACKEND`` set), all three at once, runs
its checks in one batch and reports. The JAX and PyTorch children save
their own ``.keras`` files, which the other two children load: every
file crosses to both other backends, each time in a fresh process. The
families are those every converted model ends in, one HDF5 layout:
bilm-tf's fixture (no skip connections), a model with skip connections,
a word-input model, a converted ELMoForManyLangs model (chars and a
word part), one with a cross-lingual alignment, Paddle's word-input
fixture model (tests/fixtures/paddle_baike) and a TF1 Hub module's
(tests/fixtures/tfhub_modules/google), its learned mix included.

Each child, TensorFlow's too, also reads the other fixture families
straight from their files, as a user under that backend would, and
checks them against the fixtures' own reference embeddings: the TF1 Hub
module with skip connections and other clips, the one with TF 1.2's
LSTM names, DeepPavlov's module (its learned mix), PaddleNLP's
``.pdparams`` and DeepPavlov's LM checkpoint, against bilm-tf's dump of
the same weights as TensorFlow embeds it.
"""

import json
import os
import pathlib
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from bilm_keras import Batcher, ELMoEmbedding
from bilm_keras.options import BiLMOptions
from bilm_keras.save_dirs.weight_dump import prediction_options
from bilm_keras.weights.bilm_tf_hdf5 import load_bilm_tf_hdf5
from helpers import REPO_ROOT, load_reference_embeddings, require_installed

BACKENDS = ("jax", "torch")
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = REPO_ROOT / "tests" / "fixtures"
MODULES = FIXTURES / "tfhub_modules"
PADDLENLP = FIXTURES / "paddlenlp_elmo"
BILM_TF_RUN = FIXTURES / "bilm_tf_run"
DEEPPAVLOV_LM = FIXTURES / "deeppavlov_lm" / "elmo-lm-ready4fine-tuning"

SENTENCES = ["The cat sat on the mat .", "Hi", "北京 is big !",
             "a b c d e f"]


def _small_options(**lstm):
    return {
        "lstm": {"dim": 16, "projection_dim": 8, "n_layers": 2,
                 "cell_clip": 3, "proj_clip": 3, **lstm},
        "char_cnn": {"embedding": {"dim": 4}, "filters": [[1, 4], [2, 8]],
                     "n_highway": 1, "n_characters": 262,
                     "max_characters_per_token": 50,
                     "activation": "relu"},
    }


def _families(model_dir, converted):
    """``{name: layer}``, each with weights TensorFlow computes with.
    ``converted``: the folders of the converted fixture models, by
    family, and ``cache``, where the TF1 Hub module is converted."""
    keras.utils.set_random_seed(1)
    skip = ELMoEmbedding(_small_options(use_skip_connections=True),
                         output="layers", name="skip")
    words = "<S> </S> <UNK> The cat sat on the mat . Hi".split()
    word_options = {"lstm": _small_options()["lstm"],
                    "n_tokens_vocab": len(words)}
    word_input = ELMoEmbedding(word_options, output="layers",
                               vocabulary=words, name="word_input")
    aligned = ELMoEmbedding(_small_options(), output="mix",
                            alignment_matrices=3, name="aligned")
    aligned.alignment.assign(np.random.default_rng(0).normal(
        size=(3, 16, 16)).astype(np.float32))
    return {
        "bilm_tf": ELMoEmbedding.from_pretrained(model_dir, output="layers"),
        "skip": skip,
        "word_input": word_input,
        "manylangs": ELMoEmbedding.from_pretrained(converted["manylangs"],
                                                   output="layers"),
        "aligned": aligned,
        "paddle_baike": ELMoEmbedding.from_pretrained(
            converted["paddle_baike"], output="layers"),
        # the module's learned mix, as its own "elmo" output
        "tfhub": ELMoEmbedding.from_pretrained(
            MODULES / "google", cache_dir=converted["cache"]),
    }


@pytest.fixture(scope="module")
def tensorflow_files(bilm_fixtures, manylangs_converted,
                     paddle_baike_converted, tmp_path_factory):
    """The folder of TensorFlow's files for the child processes."""
    folder = tmp_path_factory.mktemp("backends")
    write_tensorflow_files(folder, str(bilm_fixtures / "model"), {
        "manylangs": os.path.dirname(manylangs_converted["options_file"]),
        "paddle_baike": paddle_baike_converted["outdir"],
        "cache": tmp_path_factory.mktemp("backends_cache")})
    return folder


def write_tensorflow_files(folder, model_dir, converted):
    """Each family's ``.keras`` file, ids and outputs, the fixture's
    reference and one training step's weight changes, into ``folder``."""
    folder = pathlib.Path(folder)
    families = _families(model_dir, converted)
    text = tf.constant(SENTENCES)
    for name, layer in families.items():
        ids = layer.token_ids(text).numpy()
        inputs = keras.Input(ids.shape[1:], dtype="int32")
        model = keras.Model(inputs, layer(inputs))
        model.save(folder / f"{name}.keras")
        np.save(folder / f"{name}_ids.npy", ids)
        np.save(folder / f"{name}_out.npy", model.predict(ids, verbose=0))

    sentences, expected = load_reference_embeddings(model_dir)
    firsts = [" ".join(sentences[k][0]) for k in range(3)]
    reference_ids = families["bilm_tf"].token_ids(tf.constant(firsts))
    np.save(folder / "reference_ids.npy", reference_ids.numpy())

    # one SGD step with learning rate 1: each weight moves by -gradient
    layer = ELMoEmbedding.from_pretrained(model_dir, trainable="all")
    inputs = keras.Input((None, 50), dtype="int32")
    model = keras.Model(inputs, layer(inputs))
    model.save(folder / "grad.keras")
    ids = reference_ids.numpy()
    target = np.random.default_rng(2).normal(
        size=(ids.shape[0], ids.shape[1] - 2, 32)).astype(np.float32)
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
    before = [w.numpy() for w in model.trainable_weights]
    model.train_on_batch(ids, target)
    np.save(folder / "grad_ids.npy", ids)
    np.save(folder / "grad_target.npy", target)
    np.savez(folder / "grad_deltas.npz", **{
        f"d{i}": w.numpy() - b
        for i, (w, b) in enumerate(zip(model.trainable_weights, before))})

    with open(folder / "reference.json", "w") as f:
        json.dump({"families": sorted(families),
                   "fixture_families": write_fixture_families(
                       folder, model_dir),
                   "fixture_model": model_dir,
                   "reference_top": [expected[k][0].tolist()
                                     for k in range(3)]}, f)


def write_fixture_families(folder, model_dir):
    """``{name: source}`` of the families each child reads from their
    fixture files (``spec``, the layer's ``output``, and ``converted``:
    whether ``from_pretrained`` converts it into a cache), with
    ``NAME_ids.npy`` and what the layer must give on them,
    ``NAME_want.npy``, zero past each sentence's end. ``model_dir``:
    bilm-tf's fixture model, which the TF1 Hub modules hold."""
    folder = pathlib.Path(folder)
    batcher = Batcher(None, 50)
    sources, wants = {}, {}
    # the modules' own outputs for bilm-tf's sentences (their README):
    # the 16-token one alone, a step count the children run quickly
    sentences, _ = load_reference_embeddings(model_dir)
    module_ids = batcher.batch_sentences([sentences[1][0]])
    n = module_ids.shape[1] - 2
    with np.load(MODULES / "reference.npz") as outputs:
        for name, output in (("google_skip", "layers"),
                             ("google_tf12", "layers"),
                             ("deeppavlov", "mix")):
            own = {key: outputs[f"{name}/tokens/{key}"][1:2, :n]
                   for key in ("word_emb", "lstm_outputs1",
                               "lstm_outputs2", "elmo")}
            sources[f"tfhub_{name}"] = dict(
                spec=str(MODULES / name), output=output, converted=True)
            wants[f"tfhub_{name}"] = (module_ids, own["elmo"] if (
                output == "mix") else np.stack([
                    np.concatenate([own["word_emb"]] * 2, axis=-1),
                    own["lstm_outputs1"], own["lstm_outputs2"]], axis=1))
    # PaddleNLP's ELMoEmbedder.encode, every sentence from zero states
    with open(PADDLENLP / "sentences.txt", encoding="utf-8") as f:
        words = [line.split() for line in f]
    with np.load(PADDLENLP / "embeddings.npz") as encoded:
        sources["paddlenlp"] = dict(spec=str(PADDLENLP / "elmo.pdparams"),
                                    output="layers", converted=True)
        wants["paddlenlp"] = (batcher.batch_sentences(words), _padded(
            [encoded[f"sentence_{i}"] for i in range(len(words))]))
    # DeepPavlov's LM checkpoint holds bilm-tf's fixture run's weights:
    # it gives what bilm-tf's dump of that run gives under TensorFlow
    sources["deeppavlov_lm"] = dict(spec=str(DEEPPAVLOV_LM),
                                    output="layers", converted=False)
    ids = batcher.batch_sentences([s.split() for s in SENTENCES])
    wants["deeppavlov_lm"] = (ids, _bilm_tf_run_layers(ids))
    for name in sources:
        np.save(folder / f"{name}_ids.npy", wants[name][0])
        np.save(folder / f"{name}_want.npy", wants[name][1])
    return sources


def _padded(layers):
    """Each sentence's `(L + 1, n, dim)` zero-padded to the longest and
    stacked: `(batch, L + 1, time, dim)`, the batch the layer gives."""
    time = max(a.shape[1] for a in layers)
    return np.stack([np.pad(a, [(0, 0), (0, time - a.shape[1]), (0, 0)])
                     for a in layers])


def _bilm_tf_run_layers(ids):
    """bilm-tf's dump of its fixture run (``lm_weights.hdf5``) on
    ``ids``, as ``output="layers"`` gives it under TensorFlow."""
    options = prediction_options(BiLMOptions.from_json(
        BILM_TF_RUN / "save_dir" / "options.json"))
    layer = ELMoEmbedding(options.to_dict(), output="layers",
                          name="bilm_tf_run")
    load_bilm_tf_hdf5(layer.bilm, BILM_TF_RUN / "lm_weights.hdf5")
    return layer(ids).numpy()


#: how long the three children may take together
TIMEOUT_SECONDS = 2400


@pytest.fixture(scope="module")
def child_reports(tensorflow_files):
    """``{backend: (results, stderr)}`` of the three children, run at
    once (each saves its files, then loads the others'). ``results``:
    ``{check name: None or its problem}``, and ``backend``: the backend
    the child ran."""
    for backend in BACKENDS:
        require_installed(backend, "backends")
    checks = _checks_module()
    folder = pathlib.Path(tensorflow_files)
    children, logs = {}, {}
    for backend in ("tensorflow", *BACKENDS):
        env = dict(os.environ, KERAS_BACKEND=backend,
                   PYTHONPATH=os.pathsep.join(
                       [str(REPO_ROOT)]
                       + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
        logs[backend] = (open(folder / f"{backend}.stdout", "w+"),
                         open(folder / f"{backend}.stderr", "w+"))
        children[backend] = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "backend_checks.py"),
             str(folder)], env=env, stdout=logs[backend][0],
            stderr=logs[backend][1], text=True)
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while any(child.poll() is None for child in children.values()):
        for backend, child in children.items():
            _tell_the_others(checks, folder, backend, child)
        if time.monotonic() > deadline:
            for child in children.values():
                if child.poll() is None:
                    child.kill()
                    child.wait()
            break
        time.sleep(1)
    reports = {}
    for backend, (stdout, stderr) in logs.items():
        stdout.seek(0)
        stderr.seek(0)
        reports[backend] = (dict(
            (r["name"], r["problem"]) for r in (
                json.loads(line[len("CHECK "):])
                for line in stdout.read().splitlines()
                if line.startswith("CHECK "))),
            stderr.read() + ("" if children[backend].returncode == 0
                             else f"\n(exit {children[backend].returncode})"))
        stdout.close()
        stderr.close()
    return reports


def _tell_the_others(checks, folder, backend, child):
    """A saving child that exited without saying it saved: the others
    are told, so none waits for its files."""
    if (child.poll() is not None and backend in checks.SAVERS
            and not os.path.exists(checks.marker(folder, backend))):
        checks.write_marker(folder, backend,
                            f"exited ({child.returncode}) before saving")


def _assert_checks_passed(backend, reports):
    results, stderr = reports[backend]
    results = dict(results)
    assert results.pop("backend", None) == backend, stderr[-3000:]
    names = [check.__name__ for check in _checks_module().checks_for(backend)]
    failed = {name: results.get(name, "did not run: " + stderr[-2000:])
              for name in names if results.get(name, "") is not None}
    assert not failed, json.dumps(failed, indent=1)


@pytest.mark.slow
@pytest.mark.nightly
@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_equals_tensorflow(backend, child_reports):
    # and loads the other one's .keras files
    _assert_checks_passed(backend, child_reports)


@pytest.mark.slow
@pytest.mark.nightly
def test_files_saved_under_jax_and_torch_load_under_tensorflow(
        child_reports):
    # and the fixture families read in a fresh TensorFlow process
    _assert_checks_passed("tensorflow", child_reports)


def _checks_module():
    sys.path.insert(0, HERE)
    try:
        import backend_checks
    finally:
        sys.path.remove(HERE)
    return backend_checks
