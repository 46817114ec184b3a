"""The checks one Keras backend runs in a child process, as a batch:
``python backend_checks.py FOLDER`` with ``KERAS_BACKEND`` set, FOLDER
written under TensorFlow by ``test_backends.py``. Prints a line
``CHECK {"name": ..., "problem": null or what went wrong}`` as each check
ends, so a parent that times out still sees which ran.

Only ``import bilm_keras`` comes first: the ``.keras`` files load by the
registration it makes, in a fresh process.
"""

import json
import os
import sys
import traceback

import numpy as np

import bilm_keras

ATOL = 1e-5


def _max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def check_keras_files(folder, reference):
    """Each family's ``.keras`` file, saved under TensorFlow, predicts
    TensorFlow's outputs on the same ids."""
    import keras

    problems = {}
    for name in reference["families"]:
        model = keras.models.load_model(
            os.path.join(folder, f"{name}.keras"))
        ids = np.load(os.path.join(folder, f"{name}_ids.npy"))
        want = np.load(os.path.join(folder, f"{name}_out.npy"))
        got = keras.ops.convert_to_numpy(model(ids))
        if got.shape != want.shape:
            problems[name] = f"shape {got.shape}, expected {want.shape}"
        elif _max_diff(got, want) > ATOL:
            problems[name] = f"max diff {_max_diff(got, want)}"
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
    return None if worst <= ATOL else f"max diff {worst}"


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


CHECKS = [check_keras_files, check_reference_embeddings, check_gradients,
          check_fit, check_strings_are_refused]


def main(folder):
    with open(os.path.join(folder, "reference.json")) as f:
        reference = json.load(f)
    import keras

    print("CHECK " + json.dumps({"name": "backend",
                                 "problem": keras.backend.backend()}),
          flush=True)
    for check in CHECKS:
        try:
            problem = check(folder, reference)
        except Exception:  # reported to the parent, which fails
            problem = traceback.format_exc(limit=6)
        print("CHECK " + json.dumps({"name": check.__name__,
                                     "problem": problem}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
