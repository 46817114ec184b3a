"""Shared pytest configuration and the one home of shared test helpers.

The bilm-tf fixtures are found through one setting, the environment variable
``BILM_FIXTURES`` (default ``../shared/fixtures/bilm-tf`` relative to the
repository root). When they are missing, tests that need them skip on a
developer's machine and *fail* when ``CI=true``, so CI can never go green
without checking against the reference numbers.

Two tiers: ``pytest -m "not slow"`` is the quick loop; the full suite (what
CI runs) adds the tests marked ``slow`` and everything under ``tests/bench/``.

Helpers are plain functions here (``from conftest import run_layer_test``;
``tests`` is on ``sys.path`` through setup.cfg); things with set-up are
fixtures. ``numpy_reference.py`` stays its own module: it is the independent
computation the tests compare against, not a helper.
"""

import json
import os
import pathlib

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def fixtures_root() -> pathlib.Path:
    """The bilm-tf fixture folder (``data/``, ``model/``, ``train/``)."""
    default = REPO_ROOT.parent / "shared" / "fixtures" / "bilm-tf"
    return pathlib.Path(os.environ.get("BILM_FIXTURES", default))


@pytest.fixture(scope="session")
def bilm_fixtures() -> pathlib.Path:
    root = fixtures_root()
    if not (root / "model" / "lm_weights.hdf5").exists():
        message = (
            f"bilm-tf fixtures not found at {root} "
            "(set BILM_FIXTURES to their folder)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return root


def manylangs_fixtures_root() -> pathlib.Path:
    """The ELMoForManyLangs fixture folder (``tiny.model/``,
    ``reference.hdf5``, ``sentences.json``): ``MANYLANGS_FIXTURES``, default
    ``../shared/fixtures/elmoformanylangs``."""
    default = REPO_ROOT.parent / "shared" / "fixtures" / "elmoformanylangs"
    return pathlib.Path(os.environ.get("MANYLANGS_FIXTURES", default))


@pytest.fixture(scope="session")
def manylangs_fixtures() -> pathlib.Path:
    root = manylangs_fixtures_root()
    if not (root / "reference.hdf5").exists():
        message = (
            f"ELMoForManyLangs fixtures not found at {root} "
            "(set MANYLANGS_FIXTURES to their folder)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return root


@pytest.fixture(scope="session")
def manylangs_converted(manylangs_fixtures, tmp_path_factory) -> dict:
    """The fixture's ``tiny.model`` as it is, converted once per session
    (``convert_manylangs``'s result: ``options_file``, ``weight_file``, ...).
    Read-only: a test that changes the files converts its own."""
    from bilm_keras import convert_manylangs

    out = tmp_path_factory.mktemp("manylangs") / "converted"
    return convert_manylangs(manylangs_fixtures / "tiny.model", out)


@pytest.fixture(scope="session")
def manylangs_reference(manylangs_fixtures) -> dict:
    """Upstream's outputs for the fixture sentences (``reference.hdf5``):
    ``sentences``; per sentence ``all`` `(3, n, 2P)`, ``average`` `(n, 2P)`,
    ``carryover`` `(3, n, 2P)` and ``ids`` `(n + 2, MC + 1)`, upstream's raw
    char ids with the word id as the last column."""
    import h5py
    import numpy as np

    sentences = json.loads(
        (manylangs_fixtures / "sentences.json").read_text("utf-8"))
    with h5py.File(manylangs_fixtures / "reference.hdf5", "r") as f:
        n = len(sentences)
        return dict(
            sentences=sentences,
            all=[f[str(i)][...] for i in range(n)],
            average=[f[f"average/{i}"][...] for i in range(n)],
            carryover=[f[f"carryover/{i}"][...] for i in range(n)],
            ids=[np.concatenate([f[f"char_ids/{i}"][...],
                                 f[f"word_ids/{i}"][...][:, None]], axis=1)
                 for i in range(n)],
        )


@pytest.fixture(scope="session")
def model_dir(bilm_fixtures) -> pathlib.Path:
    """``options.json``, ``lm_weights.hdf5``, ``vocab_test.txt`` and the
    reference embeddings ``lm_embeddings_{0,1,2}.hdf5``."""
    return bilm_fixtures / "model"


@pytest.fixture(scope="session")
def train_dir(bilm_fixtures) -> pathlib.Path:
    """The tiny training corpus ``data.txt`` and its ``vocab.txt``."""
    return bilm_fixtures / "train"


@pytest.fixture(scope="session")
def fixture_bilm(model_dir):
    """bilm-tf's fixture model as a stateless ``BidirectionalLanguageModel``
    (``options.json`` + ``lm_weights.hdf5``), one for the session: each
    model traces its graphs on first use (~0.5 CPU s with their first
    run), so the modules that only call it share one. Stateless, so no
    test sees another's calls; a test that needs its own settings
    (stateful, other files) builds its own."""
    from bilm_keras import BidirectionalLanguageModel

    return BidirectionalLanguageModel(str(model_dir / "options.json"),
                                      str(model_dir / "lm_weights.hdf5"))


@pytest.fixture(scope="session")
def fixture_export(model_dir, tmp_path_factory) -> str:
    """The bilm-tf fixture model exported (with its vocabulary) into an
    existing empty directory, once per session; returns that directory."""
    from bilm_keras.export.hub_module import export_hub

    outdir = tmp_path_factory.mktemp("hub_shared") / "elmo"
    outdir.mkdir()
    return export_hub(
        options_file=str(model_dir / "options.json"),
        weight_file=str(model_dir / "lm_weights.hdf5"),
        vocab_file=str(model_dir / "vocab_test.txt"),
        outdir=outdir,
    )


# ------------------------------------------------------- commands and files
def load_bin_script(name):
    """``bin/NAME`` imported as a module (its ``main(argv)`` callable)."""
    import importlib.util

    path = REPO_ROOT / "bin" / name
    spec = importlib.util.spec_from_file_location(
        "bin_" + path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def user_env() -> dict:
    """The environment a user's command runs in: this checkout's package
    (whatever is installed) and the command's own TF log level, not
    conftest's."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT)] + os.environ.get("PYTHONPATH", "").split(
            os.pathsep)))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return env


def load_reference_embeddings(model_dir):
    """bilm-tf's fixture: ``(sentences, expected)``.

    ``sentences[k][i]`` is sentence ``i`` of list ``k`` (a token list);
    ``expected[k][i]`` its top-layer embedding `(n_tokens, 2 * proj)`
    (forward and backward halves concatenated), as bilm-tf's test_model.py
    reads them.
    """
    import h5py
    import numpy as np

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


# ------------------------------------------------------ the layer contract
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

    As keras-hub's ``TestCase.run_layer_test``: a JSON-equal
    ``get_config`` round trip, a ``serialize_keras_object`` round trip, a
    symbolic call inside a functional model, an eager call, one ``fit``
    step, and a ``.keras`` save/load that reproduces the outputs.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        input_data: one array or a tuple of arrays (positional inputs).
        expected_output_shape: the eager output's shape.
        tmp_path: a folder for the ``.keras`` file.
        run_training: fit one step (layers with trainable weights).
    """
    import keras
    import numpy as np

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


# ------------------------------------------- tiny training configurations
def fixture_options(bidirectional=True, use_chars=False, share=False,
                    skip=False, **changes):
    """bilm-tf ``tests/test_training.py``'s options (a ``BiLMOptions``)."""
    from bilm_keras.options import BiLMOptions

    d = {
        "n_negative_samples_batch": 16,
        "n_train_tokens": 134,
        "batch_size": 2,
        "unroll_steps": 10,
        "n_epochs": 50,
        "all_clip_norm_val": 1.0,
        "dropout": 0.1,
        "lstm": {"dim": 16, "projection_dim": 8, "n_layers": 2,
                 "use_skip_connections": skip},
        "bidirectional": bidirectional,
    }
    if use_chars:
        d["char_cnn"] = {
            "n_characters": 261,
            "max_characters_per_token": 10,
            "filters": [[1, 8], [2, 8], [3, 16], [4, 32], [5, 64]],
            "activation": "tanh",
            "embedding": {"dim": 4},
            "n_highway": 1,
        }
    if share:
        d["share_embedding_softmax"] = True
    d.update(changes)
    return BiLMOptions.from_dict(d, source="<test options>")


@pytest.fixture(scope="session")
def short_char_run(train_dir, tmp_path_factory):
    """``(save_dir, result)``: a bidirectional char-CNN biLM with clips and
    skip connections, trained one epoch (6 steps of 2 x 10 tokens, dropout
    0.1, seed 3) on the fixture corpus. Training is mostly tracing its
    step (~3 CPU s), so the quick tests that only read a short run's
    save_dir share this one (test_short_run_save_dir,
    test_evaluate_vs_numpy); none of them writes into it."""
    from bilm_keras.training import train

    lstm = {"dim": 16, "projection_dim": 8, "n_layers": 2,
            "use_skip_connections": True, "cell_clip": 3, "proj_clip": 3}
    options = fixture_options(use_chars=True, dropout=0.1, lstm=lstm,
                              n_epochs=1)
    save_dir = tmp_path_factory.mktemp("short_char_run") / "checkpoints"
    result = train(options=options, train_prefix=str(train_dir / "data.txt"),
                   vocab_file=str(train_dir / "vocab.txt"),
                   save_dir=str(save_dir), seed=3, log_every=1000)
    return save_dir, result


def training_run(train_dir, options, *, sparse_gradients=True,
                 dropout_seed=None, **model_kwargs):
    """``(lm, train_step, batches, states)`` on the fixture corpus, seeded
    (model, softmax sampler and data: seed 0) for a step-by-step run."""
    import keras
    import tensorflow as tf

    from bilm_keras.data.tf_dataset import make_tf_dataset
    from bilm_keras.training.inputs import load_vocab, make_dataset
    from bilm_keras.training.model_setup import build_model
    from bilm_keras.training.train_step import make_train_step

    keras.utils.set_random_seed(0)
    vocab = load_vocab(str(train_dir / "vocab.txt"), options)
    options = options.replace(n_tokens_vocab=vocab.size)
    lm, optimizer = build_model(options, seed=0, **model_kwargs)
    step = make_train_step(
        lm, optimizer, tf.distribute.get_strategy(), options,
        sparse_gradients=sparse_gradients, dropout_seed=dropout_seed)
    data = make_dataset(str(train_dir / "data.txt"), vocab, options, seed=0)
    batches = iter(make_tf_dataset(data, options.batch_size,
                                   options.unroll_steps))
    return lm, step, batches, lm.zero_states(options.batch_size)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: a long check; CI still runs it, at a small size",
    )


@pytest.hookimpl(tryfirst=True)  # before -m deselects by mark
def pytest_collection_modifyitems(config, items):
    # tests/bench/ runs the bench/ scripts end to end (each a process that
    # imports TensorFlow and times passes): slow as a folder, so the files
    # stay as the benchmarks' owners write them
    bench = REPO_ROOT / "tests" / "bench"
    for item in items:
        if bench in item.path.parents:
            item.add_marker(pytest.mark.slow)
