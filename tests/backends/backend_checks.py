"""The checks one Keras backend runs in a child process, as a batch:
``python backend_checks.py FOLDER`` with ``KERAS_BACKEND`` set, FOLDER
written under TensorFlow by ``test_backends.py``. Prints a line
``CHECK {"name": ..., "problem": null or what went wrong}`` as each check
ends, so a parent that times out still sees which ran.

The children of all three backends run at once. The JAX and PyTorch ones
save their own ``.keras`` files into ``FOLDER/BACKEND/`` early, then say
so in ``FOLDER/BACKEND.saved``. Each child loads the other backends'
files last, once their ``.saved`` is there. The TensorFlow child reads
the fixture families and then does only that. The parent writes a
``.saved`` for a child that exits without one, so no child waits for a
file that will never come.

Only ``import bilm_keras`` comes first: the ``.keras`` files load by the
registration it makes, in a fresh process.
"""

import json
import os
import sys
import time
import traceback

import numpy as np

import bilm_keras

ATOL = 1e-5
#: the backends that save ``.keras`` files for the others to load
SAVERS = ("jax", "torch")
#: how long a child waits for another's files
WAIT_SECONDS = 1800


def _max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def check_keras_files(folder, reference):
    """Each family's ``.keras`` file, saved under TensorFlow, predicts
    TensorFlow's outputs on the same ids."""
    problems = {}
    for name in reference["families"]:
        problem = _compare_model(
            os.path.join(folder, f"{name}.keras"),
            np.load(os.path.join(folder, f"{name}_ids.npy")),
            np.load(os.path.join(folder, f"{name}_out.npy")))
        if problem is not None:
            problems[name] = problem
    return problems or None


def check_reference_embeddings(folder, reference):
    """The bilm-tf fixture's top layer equals bilm-tf's own embeddings."""
    import keras

    layer = bilm_keras.ELMoEmbedding.from_pretrained(
        reference["fixture_model"], output="layers")
    ids = np.load(os.path.join(folder, "reference_ids.npy"))
    got = keras.ops.convert_to_numpy(layer(ids))
    worst = 0.0
    for k, want in enumerate(reference["reference_top"]):
        want = np.asarray(want, np.float32)
        worst = max(worst, _max_diff(got[k, -1, :len(want)], want))
    if worst > ATOL:
        return f"max diff {worst}"
    if keras.backend.backend() == "jax":
        # an eager call runs compiled, once per input shape: a second
        # call on the same shape compiles nothing and gives the same
        again = keras.ops.convert_to_numpy(layer(ids))
        compiled = layer._jax_inference._cache_size()
        if compiled != 1 or _max_diff(again, got) != 0.0:
            return (f"eager calls under JAX: {compiled} compilations for "
                    f"one shape, the second call off by "
                    f"{_max_diff(again, got)}")
        # and its output carries the mask: a token t is real where
        # position t + 2 (after <S> and t) holds any character id
        mix = bilm_keras.ELMoEmbedding.from_pretrained(
            reference["fixture_model"])
        mask = getattr(mix(ids), "_keras_mask", None)
        want = (np.asarray(ids) > 0).any(axis=-1)[:, 2:]
        if mask is None or not np.array_equal(np.asarray(mask), want):
            return f"eager call under JAX: mask {mask}, expected {want}"
    return None


def check_fixture_families(folder, reference):
    """Each family read here straight from its fixture files (a TF1 Hub
    module, a ``.pdparams``, a TF1 checkpoint), converted under this
    backend into its own cache, gives its reference: the fixture's
    embeddings, or TensorFlow's outputs of bilm-tf's dump of the same
    weights."""
    import keras

    cache = os.path.join(folder, "cache", keras.backend.backend())
    problems = {}
    for name, source in reference["fixture_families"].items():
        layer = bilm_keras.ELMoEmbedding.from_pretrained(
            source["spec"], output=source["output"],
            **({"cache_dir": cache} if source["converted"] else {}))
        ids = np.load(os.path.join(folder, f"{name}_ids.npy"))
        inputs = keras.Input(ids.shape[1:], dtype="int32")
        # predict's step, compiled once: under JAX an eager call compiles
        # each LSTM's scan anew, twice the time of one compiled program
        got = keras.Model(inputs, layer(inputs)).predict_on_batch(ids)
        problem = _compare(keras.ops.convert_to_numpy(got), np.load(
            os.path.join(folder, f"{name}_want.npy")))
        if problem is not None:
            problems[name] = problem
    return problems or None


def _sgd_deltas(model, ids, target):
    import keras

    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
    before = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    model.train_on_batch(ids, target)
    return [keras.ops.convert_to_numpy(w) - b
            for w, b in zip(model.trainable_weights, before)]


def check_gradients(folder, reference):
    """One SGD step (learning rate 1) of the fixture model with
    ``trainable="all"`` moves every weight by TensorFlow's gradient."""
    import keras

    model = keras.models.load_model(os.path.join(folder, "grad.keras"))
    ids = np.load(os.path.join(folder, "grad_ids.npy"))
    target = np.load(os.path.join(folder, "grad_target.npy"))
    deltas = _sgd_deltas(model, ids, target)
    want = np.load(os.path.join(folder, "grad_deltas.npz"))
    want = [want[f"d{i}"] for i in range(len(want.files))]
    if len(want) != len(deltas):
        return f"{len(deltas)} trainable weights, TensorFlow {len(want)}"
    worst = max(_max_diff(a, b) for a, b in zip(deltas, want))
    return None if worst <= ATOL else f"max gradient diff {worst}"


def check_fit(folder, reference):
    """``fit`` with each ``trainable`` moves what it should."""
    import keras

    ids = np.load(os.path.join(folder, "reference_ids.npy"))
    labels = np.zeros(ids.shape[:2], np.int32)[:, 2:] + 1
    problems = []
    for trainable in ("mix", "all", False):
        layer = bilm_keras.ELMoEmbedding.from_pretrained(
            reference["fixture_model"], trainable=trainable)
        inputs = keras.Input((None, ids.shape[-1]), dtype="int32")
        tags = keras.layers.Dense(3, activation="softmax")(layer(inputs))
        model = keras.Model(inputs, tags)
        model.compile(optimizer=keras.optimizers.SGD(0.5),
                      loss="sparse_categorical_crossentropy")
        mix = keras.ops.convert_to_numpy(layer.scalar_mix.gamma).copy()
        lm = keras.ops.convert_to_numpy(
            layer.bilm.forward_lstm.cell0.kernel_t).copy()
        history = model.fit(ids, labels, epochs=2, batch_size=2, verbose=0)
        losses = history.history["loss"]
        moved_mix = _max_diff(mix, layer.scalar_mix.gamma) > 0
        moved_lm = _max_diff(lm, layer.bilm.forward_lstm.cell0.kernel_t) > 0
        if not np.all(np.isfinite(losses)):
            problems.append(f"{trainable}: losses {losses}")
        if moved_mix != (trainable in ("mix", "all")):
            problems.append(f"{trainable}: the mix moved: {moved_mix}")
        if moved_lm != (trainable == "all"):
            problems.append(f"{trainable}: the biLM moved: {moved_lm}")
    return "; ".join(problems) or None


def check_strings_are_refused(folder, reference):
    """Strings get one TypeError that names the preprocessor."""
    layer = bilm_keras.ELMoEmbedding.from_pretrained(
        reference["fixture_model"])
    for inputs in (np.array(["The cat ."]), np.array([["The", "cat"]])):
        try:
            layer(inputs)
        except TypeError as error:
            if "ELMoPreprocessor" not in str(error):
                return f"the error does not name it: {error}"
        else:
            return f"{inputs.dtype} strings were taken"
    return None


def _compare_model(path, ids, want):
    """What ``path``'s model predicts on ``ids`` against ``want``: None
    or the problem."""
    import keras

    return _compare(
        keras.ops.convert_to_numpy(keras.models.load_model(path)(ids)), want)


def _compare(got, want):
    """None, or how ``got`` differs from ``want`` beyond ``ATOL``."""
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if _max_diff(got, want) > ATOL:
        return f"max diff {_max_diff(got, want)}"
    return None


def _saved_names(reference):
    """The files a saving child writes: each family's model as loaded
    from TensorFlow's file and saved again, and the fixture model built
    under the saving backend (``built``)."""
    return list(reference["families"]) + ["built"]


def marker(folder, backend):
    return os.path.join(folder, f"{backend}.saved")


def write_marker(folder, backend, problem):
    """``FOLDER/BACKEND.saved``, whole or not at all: None when the files
    are all there, else what went wrong."""
    path = marker(folder, backend)
    with open(path + ".tmp", "w") as f:
        json.dump({"problem": problem}, f)
    os.replace(path + ".tmp", path)


def save_for_other_backends(folder, reference):
    """Saves under this backend what the others load: each family's
    model, loaded from TensorFlow's file, saved again, and the fixture
    model built here, with the outputs each gives on its ids here."""
    import keras

    backend = keras.backend.backend()
    out = os.path.join(folder, backend)
    os.makedirs(out, exist_ok=True)
    problem = "did not finish"
    try:
        for name in reference["families"]:
            model = keras.models.load_model(
                os.path.join(folder, f"{name}.keras"))
            ids = np.load(os.path.join(folder, f"{name}_ids.npy"))
            _save(model, ids, out, name)
        layer = bilm_keras.ELMoEmbedding.from_pretrained(
            reference["fixture_model"], output="layers")
        ids = np.load(os.path.join(folder, "reference_ids.npy"))
        inputs = keras.Input((None, ids.shape[-1]), dtype="int32")
        _save(keras.Model(inputs, layer(inputs)), ids, out, "built")
        problem = None
    except Exception:  # the others are told, and this check fails
        problem = traceback.format_exc(limit=6)
    finally:
        write_marker(folder, backend, problem)
    return problem


def _save(model, ids, out, name):
    import keras

    model.save(os.path.join(out, f"{name}.keras"))
    np.save(os.path.join(out, f"{name}_ids.npy"), ids)
    np.save(os.path.join(out, f"{name}_out.npy"),
            keras.ops.convert_to_numpy(model(ids)))


def check_files_of_other_backends(folder, reference):
    """The ``.keras`` files the other backends saved load here and
    predict what they predicted there."""
    import keras

    problems = {}
    for saver in SAVERS:
        if saver == keras.backend.backend():
            continue
        deadline = time.monotonic() + WAIT_SECONDS
        while (not os.path.exists(marker(folder, saver))
               and time.monotonic() < deadline):
            time.sleep(1)
        if not os.path.exists(marker(folder, saver)):
            problems[saver] = "its files did not come"
            continue
        with open(marker(folder, saver)) as f:
            saved = json.load(f)["problem"]
        if saved is not None:
            problems[saver] = f"saved none: {saved}"
            continue
        out = os.path.join(folder, saver)
        for name in _saved_names(reference):
            problem = _compare_model(
                os.path.join(out, f"{name}.keras"),
                np.load(os.path.join(out, f"{name}_ids.npy")),
                np.load(os.path.join(out, f"{name}_out.npy")))
            if problem is not None:
                problems[f"{saver}/{name}"] = problem
    return problems or None


def checks_for(backend):
    """The checks of ``backend``'s child, in the order they run."""
    if backend not in SAVERS:
        return [check_fixture_families, check_files_of_other_backends]
    return [check_keras_files, save_for_other_backends,
            check_reference_embeddings, check_fixture_families,
            check_gradients, check_fit, check_strings_are_refused,
            check_files_of_other_backends]


def main(folder):
    with open(os.path.join(folder, "reference.json")) as f:
        reference = json.load(f)
    import keras

    print("CHECK " + json.dumps({"name": "backend",
                                 "problem": keras.backend.backend()}),
          flush=True)
    for check in checks_for(keras.backend.backend()):
        try:
            problem = check(folder, reference)
        except Exception:  # reported to the parent, which fails
            problem = traceback.format_exc(limit=6)
        print("CHECK " + json.dumps({"name": check.__name__,
                                     "problem": problem}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
