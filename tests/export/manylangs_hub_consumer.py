"""Consumers of an exported ELMoForManyLangs SavedModel, in a fresh process.

``python manylangs_hub_consumer.py MODE IN.json OUT.npz``: reads the
inputs from ``IN.json``, writes every output array to ``OUT.npz`` and
prints one ``REPORT`` JSON line. ``test_manylangs_hub_export.py``
compares the arrays with ``reference.hdf5``. Modes:

* ``hub_load``: ``hub.load``; the ``tokens``, ``default`` and ``elmo``
  signatures, the assets, and ``ELMoHubLayer`` (Keras 3) on ``default``.
* ``tf_keras``: ``hub.KerasLayer`` under ``TF_USE_LEGACY_KERAS=1``.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402


def import_hub():
    """``tensorflow_hub``; its import-time TF version check needs
    ``pkg_resources``, which setuptools >= 81 no longer ships: give it
    ``packaging``'s ``parse_version`` (all it uses) when it is missing."""
    try:
        import pkg_resources  # noqa: F401
    except ModuleNotFoundError:
        import types

        from packaging.version import parse

        sys.modules["pkg_resources"] = types.SimpleNamespace(
            parse_version=parse)
    import tensorflow_hub

    return tensorflow_hub


def hub_load(cfg, arrays, report):
    import tensorflow as tf

    from bilm_keras.export.elmo_hub_layer import ELMoHubLayer

    hub = import_hub()
    module = hub.load(cfg["dir"])
    sig = module.signatures
    outs = {
        "tokens": sig["tokens"](
            tokens=tf.constant(cfg["padded_tokens"]),
            sequence_len=tf.constant(cfg["sequence_len"], tf.int32)),
        "default": sig["default"](strings=tf.constant(cfg["strings"])),
        "elmo": sig["elmo"](char_ids=tf.constant(cfg["ids"], tf.int32)),
        "call": module(tf.constant(cfg["strings"])),
    }
    for name, out in outs.items():
        for key, value in out.items():
            arrays[f"{name}/{key}"] = value.numpy()
    report["elmo_width"] = (
        sig["elmo"].structured_input_signature[1]["char_ids"].shape[-1])
    report["assets"] = sorted(
        os.path.basename(a.asset_path.numpy().decode())
        for a in (module.options_file, module.char_dic_file,
                  module.word_dic_file)
    )
    try:
        bad_word = tf.concat([tf.ones([1, 3, report["elmo_width"] - 1],
                                      tf.int32),
                              tf.fill([1, 3, 1], 1000)], axis=-1)
        sig["elmo"](char_ids=bad_word)
        report["elmo_out_of_range"] = None
    except tf.errors.InvalidArgumentError as e:
        report["elmo_out_of_range"] = str(e)[:500]
    layer = ELMoHubLayer(cfg["dir"], output_key=None)
    out = layer(tf.constant(cfg["strings"]))
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        arrays[f"keras3/{key}"] = np.asarray(out[key])


def tf_keras(cfg, arrays, report):
    import tensorflow as tf

    hub = import_hub()
    layer = hub.KerasLayer(cfg["dir"], signature="tokens",
                           signature_outputs_as_dict=True)
    out = layer(dict(tokens=tf.constant(cfg["padded_tokens"]),
                     sequence_len=tf.constant(cfg["sequence_len"], tf.int32)))
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        arrays[f"tf_keras/{key}"] = out[key].numpy()
    trainable = hub.KerasLayer(cfg["dir"], trainable=True,
                               output_key="default")
    arrays["tf_keras/call_default"] = trainable(
        tf.constant(cfg["strings"])).numpy()
    report["n_weights"] = len(trainable.weights)


def main(argv):
    mode, in_json, out_npz = argv
    with open(in_json, encoding="utf-8") as f:
        cfg = json.load(f)
    arrays, report = {}, {}
    {"hub_load": hub_load, "tf_keras": tf_keras}[mode](cfg, arrays, report)
    np.savez(out_npz, **arrays)
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
