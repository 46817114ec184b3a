"""Consumers of an exported SavedModel, run in fresh processes.

``python hub_consumers.py MODE IN.json OUT.npz`` reads its inputs from
``IN.json``, writes arrays to ``OUT.npz`` and prints one JSON line of
findings. ``MODE`` may name several modes, comma-separated, run in that
order in the one process (the findings then one JSON object per mode):
``hub_load,keras3`` saves a process start, ``hub.load`` running first,
before Keras is imported. The tests in ``test_saved_model_export.py`` compare
the arrays with references computed in their own process. Modes:

* ``hub_load``: ``hub.load`` only (no Keras): the three signatures,
  ``__call__``, bad input, an empty batch, the variables' trainability,
  and a second export for reproducibility.
* ``keras3``: ``ELMoHubLayer`` trained with ``model.fit`` and
  ``keras.layers.TFSMLayer(call_endpoint="default")`` for inference.
* ``tf_keras``: ``hub.KerasLayer`` under ``TF_USE_LEGACY_KERAS=1``,
  trainable (fit) and through the ``default`` signature.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402

KEYS = ("word_emb", "lstm_outputs1", "lstm_outputs2", "elmo", "default",
        "sequence_len")


def _error(fn):
    try:
        fn()
    except Exception as e:  # the message is the finding
        return f"{type(e).__name__}: {str(e)[:2000]}"
    return None


def _train_data(cfg):
    sentences = cfg["train_sentences"]
    labels = np.asarray(cfg["train_labels"], np.float32)
    return sentences, labels


def _signature_specs(module):
    return {
        name: {
            "inputs": {
                k: [spec.dtype.name, spec.shape.as_list()]
                for k, spec in fn.structured_input_signature[1].items()
            },
            "outputs": {
                k: [spec.dtype.name, spec.shape.as_list()]
                for k, spec in fn.structured_outputs.items()
            },
        }
        for name, fn in module.signatures.items()
    }


def hub_load(cfg, arrays, report):
    import tensorflow as tf
    import tensorflow_hub as hub

    module = hub.load(cfg["dir"])
    report["signatures"] = _signature_specs(module)
    sentences = tf.constant(cfg["sentences"])
    outs = {
        "default": module.signatures["default"](strings=sentences),
        "positional": module.signatures["default"](sentences),
        "tokens": module.signatures["tokens"](
            tokens=tf.constant(cfg["padded_tokens"]),
            sequence_len=tf.constant(cfg["sequence_len"], tf.int32),
        ),
        "elmo": module.signatures["elmo"](
            char_ids=tf.constant(cfg["char_ids"], tf.int32)
        ),
        "call": module(sentences),
        "call_training": module(sentences, training=True),
    }
    for name, out in outs.items():
        for key, value in out.items():
            arrays[f"{name}/{key}"] = value.numpy()
    empty = module.signatures["default"](strings=tf.constant([], tf.string))
    report["empty_batch"] = {k: v.shape.as_list() for k, v in empty.items()}

    sig = module.signatures
    report["errors"] = {
        "default_int": _error(lambda: sig["default"](
            strings=tf.constant([1, 2]))),
        "default_rank2": _error(lambda: sig["default"](
            strings=tf.constant([["a b"]]))),
        "tokens_float_len": _error(lambda: sig["tokens"](
            tokens=tf.constant([["a"]]),
            sequence_len=tf.constant([1.0]))),
        "tokens_len_too_long": _error(lambda: sig["tokens"](
            tokens=tf.constant([["a"]]),
            sequence_len=tf.constant([2], tf.int32))),
        "elmo_rank2": _error(lambda: sig["elmo"](
            char_ids=tf.zeros([2, 50], tf.int32))),
        "elmo_max_chars": _error(lambda: sig["elmo"](
            char_ids=tf.zeros([1, 3, 49], tf.int32))),
        "elmo_out_of_range": _error(lambda: sig["elmo"](
            char_ids=tf.fill([1, 3, 50], 262))),
        "elmo_float": _error(lambda: sig["elmo"](
            char_ids=tf.zeros([1, 3, 50], tf.float32))),
        # the root's tf.functions check their TensorSpec before running
        "fn_default_rank2": _error(lambda: module.default(
            tf.constant([["a b"]]))),
        "fn_elmo_rank2": _error(lambda: module.elmo(
            tf.zeros([2, 50], tf.int32))),
        "fn_tokens_int": _error(lambda: module.tokens(
            tf.constant([[1]]), tf.constant([1]))),
        "call_int": _error(lambda: module(tf.constant([1, 2]))),
    }
    report["variables"] = len(module.variables)
    report["trainable"] = [v.name for v in module.trainable_variables]
    report["trainable_flags"] = sum(v.trainable for v in module.variables)
    report["regularization_losses"] = len(module.regularization_losses)
    report["assets"] = sorted(
        os.path.basename(a.asset_path.numpy().decode())
        for a in (module.options_file, module.vocab_file)
    )

    twice = hub.load(cfg["dir_again"])
    again = twice.signatures["default"](strings=sentences)
    for key, value in again.items():
        arrays[f"again/{key}"] = value.numpy()
    report["signatures_again"] = sorted(twice.signatures)
    report["signatures_again_specs"] = _signature_specs(twice)

    lm = hub.load(cfg["dir_trainable_lm"])
    report["trainable_lm"] = len(lm.trainable_variables)
    report["trainable_lm_flags"] = sum(v.trainable for v in lm.variables)
    report["trainable_lm_variables"] = len(lm.variables)
    report["trainable_lm_regularization"] = [
        float(loss()) for loss in lm.regularization_losses]


def keras3(cfg, arrays, report):
    import keras
    import tensorflow as tf

    from bilm_keras.export.elmo_hub_layer import ELMoHubLayer

    layer = ELMoHubLayer(cfg["dir"], name="elmo")
    report["trainable"] = sorted(w.name for w in layer.trainable_weights)
    text = keras.Input(shape=(), dtype="string")
    prob = keras.layers.Dense(1, activation="sigmoid")(layer(text))
    model = keras.Model(text, prob)
    model.compile(keras.optimizers.Adam(0.05), "binary_crossentropy")
    sentences, labels = _train_data(cfg)
    before = {w.name: w.numpy().copy() for w in layer.weights}
    data = tf.data.Dataset.from_tensor_slices(
        (tf.constant(sentences), labels)).batch(len(sentences))
    history = model.fit(data, epochs=cfg["epochs"], verbose=0)
    report["loss"] = [float(x) for x in history.history["loss"]]
    report["changed"] = sorted(
        w.name for w in layer.weights
        if not np.array_equal(w.numpy(), before[w.name])
    )
    # the fitted values live in the SavedModel's own variables
    arrays["mix_after"] = layer._module.trainable_variables[0].numpy()

    config = layer.get_config()
    clone = ELMoHubLayer.from_config(config)
    report["config"] = {k: config[k] for k in
                        ("savedmodel_path", "signature", "output_key")}
    arrays["clone_default"] = keras.ops.convert_to_numpy(
        clone(tf.constant(cfg["sentences"])))

    tfsm = keras.layers.TFSMLayer(cfg["dir"], call_endpoint="default")
    out = tfsm(tf.constant(cfg["sentences"]))
    for key in KEYS:
        arrays[f"tfsm/{key}"] = keras.ops.convert_to_numpy(out[key])


def tf_keras(cfg, arrays, report):
    import tensorflow as tf
    import tensorflow_hub as hub
    import tf_keras as keras

    layer = hub.KerasLayer(cfg["dir"], trainable=True, output_key="default")
    text = keras.Input(shape=(), dtype=tf.string)
    prob = keras.layers.Dense(1, activation="sigmoid")(layer(text))
    model = keras.Model(text, prob)
    model.compile(keras.optimizers.Adam(0.05), "binary_crossentropy")
    report["trainable"] = sorted(w.name for w in layer.trainable_weights)
    report["n_weights"] = len(layer.weights)
    sentences, labels = _train_data(cfg)
    before = {w.name: w.numpy().copy() for w in layer.weights}
    history = model.fit(np.array(sentences, dtype=object), labels,
                        batch_size=len(sentences), epochs=cfg["epochs"],
                        verbose=0)
    report["loss"] = [float(x) for x in history.history["loss"]]
    report["changed"] = sorted(
        w.name for w in layer.weights
        if not np.array_equal(w.numpy(), before[w.name])
    )
    inference = hub.KerasLayer(cfg["dir"], signature="default",
                               output_key="default")
    arrays["signature_default"] = inference(
        tf.constant(cfg["sentences"])).numpy()
    report["signature_trainable_error"] = _error(
        lambda: hub.KerasLayer(cfg["dir"], signature="default",
                               output_key="default", trainable=True)(
            tf.constant(["a"])))


def main(argv):
    modes, in_json, out_npz = argv
    with open(in_json, encoding="utf-8") as f:
        cfg = json.load(f)
    arrays, reports = {}, {}
    for mode in modes.split(","):  # in order: hub_load before any Keras
        mode_arrays = {}
        reports[mode] = {}
        {"hub_load": hub_load, "keras3": keras3, "tf_keras": tf_keras}[mode](
            cfg, mode_arrays, reports[mode])
        assert not set(mode_arrays) & set(arrays), "array names collide"
        arrays.update(mode_arrays)
    np.savez(out_npz, **arrays)
    print("REPORT " + json.dumps(
        reports if "," in modes else reports[modes]))


if __name__ == "__main__":
    main(sys.argv[1:])
