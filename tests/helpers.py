"""Shared test helpers: the layer contract every bilm_keras layer meets.

``run_layer_test`` follows keras-hub's ``TestCase.run_layer_test``: a
JSON-equal ``get_config`` round trip, a ``serialize_keras_object`` round
trip, a symbolic call inside a functional model, an eager call, one
``fit`` step, and a ``.keras`` save/load that reproduces the outputs.
"""

import json
import os

import keras
import numpy as np


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    expected_output_shape,
    tmp_path,
    run_training=True,
):
    """Checks the Keras layer contract for one configuration.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        input_data: one array or a tuple of arrays (positional inputs).
        expected_output_shape: the eager output's shape.
        tmp_path: a folder for the ``.keras`` file.
        run_training: fit one step (layers with trainable weights).
    """
    inputs = _as_list(input_data)

    # config: JSON-serialisable, and from_config(get_config()) is equal
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    json.dumps(config)
    revived = layer_cls.from_config(config)
    assert revived.get_config() == config

    # serialize_keras_object round trip through the registered name
    serialized = keras.saving.serialize_keras_object(layer)
    again = keras.saving.deserialize_keras_object(
        json.loads(json.dumps(serialized))
    )
    assert type(again) is layer_cls
    assert again.get_config() == config

    # eager call (builds), then a symbolic call in a functional model
    eager = layer(*inputs)
    assert tuple(eager.shape) == tuple(expected_output_shape)
    assert np.all(np.isfinite(np.asarray(eager)))
    symbolic_inputs = [
        keras.Input(shape=x.shape[1:], dtype=str(x.dtype)) for x in inputs
    ]
    model = keras.Model(symbolic_inputs, layer(*symbolic_inputs))
    np.testing.assert_allclose(
        model.predict(inputs, verbose=0), np.asarray(eager), atol=1e-6
    )

    # one fit step changes the trainable weights
    if run_training:
        before = [np.array(w) for w in layer.trainable_weights]
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        target = np.random.default_rng(0).normal(
            size=np.asarray(eager).shape
        ).astype("float32")
        model.fit(inputs, target, epochs=1, batch_size=len(inputs[0]),
                  verbose=0)
        after = [np.array(w) for w in layer.trainable_weights]
        assert any(not np.allclose(a, b) for a, b in zip(after, before))

    # .keras save / load gives identical outputs
    path = os.path.join(tmp_path, "layer_model.keras")
    expected = model.predict(inputs, verbose=0)
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(
        loaded.predict(inputs, verbose=0), expected, atol=1e-6
    )
    return layer


def load_reference_embeddings(model_dir):
    """bilm-tf's fixture: ``(sentences, expected)``.

    ``sentences[k][i]`` is sentence ``i`` of list ``k`` (a token list);
    ``expected[k][i]`` its top-layer embedding `(n_tokens, 2 * proj)`
    (forward and backward halves concatenated), as bilm-tf's test_model.py
    reads them.
    """
    import h5py

    with open(os.path.join(model_dir, "lm_embeddings_sentences.json")) as f:
        raw = json.load(f)
    sentences = [[s.strip().split() for s in lst] for lst in raw]
    expected = []
    for k in range(len(raw)):
        path = os.path.join(model_dir, f"lm_embeddings_{k}.hdf5")
        with h5py.File(path, "r") as fin:
            expected.append([
                np.concatenate([fin[str(i)][0], fin[str(i)][1]], axis=-1)
                for i in range(len(raw[k]))
            ])
    return sentences, expected


def write_model_files(folder, options, weights):
    """Writes ``options.json`` and ``weights.hdf5`` (bilm-tf names) into
    ``folder``; returns both paths as strings."""
    import h5py

    options_file = os.path.join(folder, "options.json")
    with open(options_file, "w") as f:
        json.dump(options, f)
    weight_file = os.path.join(folder, "weights.hdf5")
    with h5py.File(weight_file, "w") as f:
        for name, value in weights.items():
            f.create_dataset(name, data=value)
    return options_file, weight_file
