"""Plain helpers the tests share (``from helpers import ...``; ``tests``
is on ``sys.path`` through setup.cfg). Things with set-up are fixtures, in
the ``conftest.py`` files; ``numpy_reference.py`` stays its own module: it
is the independent computation the tests compare against, not a helper.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


# ------------------------------------------------- fixtures and extras
def in_ci() -> bool:
    """``CI=true``: what a developer's machine may skip, CI must run."""
    return os.environ.get("CI", "").lower() == "true"


def skip_or_fail(message: str):
    """Skips the test with ``message``; under ``CI=true`` fails it, so CI
    can never go green without what it needs."""
    if in_ci():
        pytest.fail(message)
    pytest.skip(message, allow_module_level=True)


def require_extra(module: str, extra: str):
    """Imports and returns ``module`` of the optional extra ``extra``
    (``pip install -e '.[EXTRA]'``); without it the test skips saying so
    (fails under ``CI=true``: CI installs every extra)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        _missing_extra(module, extra)


def require_installed(module: str, extra: str) -> None:
    """As :func:`require_extra`, without importing ``module`` (a test
    whose subprocess imports it: collecting the test costs nothing)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        _missing_extra(module, extra)


def _missing_extra(module: str, extra: str):
    skip_or_fail(f"needs {module}, of the optional extra [{extra}] "
                 f"(pip install -e '.[{extra}]')")


def fixtures_root() -> pathlib.Path:
    """The bilm-tf fixture folder (``data/``, ``model/``, ``train/``):
    ``BILM_FIXTURES``, default ``tests/fixtures/bilm-tf``."""
    default = REPO_ROOT / "tests" / "fixtures" / "bilm-tf"
    return pathlib.Path(os.environ.get("BILM_FIXTURES", default))



def manylangs_fixtures_root() -> pathlib.Path:
    """The ELMoForManyLangs fixture folder (``tiny.model/``,
    ``reference.hdf5``, ``sentences.json``): ``MANYLANGS_FIXTURES``, default
    ``tests/fixtures/elmoformanylangs``."""
    default = REPO_ROOT / "tests" / "fixtures" / "elmoformanylangs"
    return pathlib.Path(os.environ.get("MANYLANGS_FIXTURES", default))


def paddle_baike_fixtures_root() -> pathlib.Path:
    """The Fluid (baike) ELMo fixture folder made by Paddle 1.8.5
    (``checkpoint/``, ``vocab.txt``, ``reference.npz``, ...)."""
    return REPO_ROOT / "tests" / "fixtures" / "paddle_baike"



# ------------------------------------------------------- commands and files
def load_script(relative_path: str):
    """The repository's script at ``relative_path`` (``bin/train_elmo.py``,
    ``examples/X.py``, ``usage_token.py``) imported as a module, its
    ``main(argv)`` callable in this process."""
    import importlib.util

    path = REPO_ROOT / relative_path
    name = "script_" + path.relative_to(REPO_ROOT).with_suffix(
        "").as_posix().replace("/", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_bin_script(name):
    """``bin/NAME`` imported as a module (its ``main(argv)`` callable)."""
    return load_script(f"bin/{name}")


#: this pytest process's command servers (``tests/command_server.py``),
#: started on first use; conftest's ``pytest_sessionfinish`` stops them
_COMMAND_SERVERS = None


def command_servers():
    """This pytest process's :class:`command_server.CommandServers`."""
    global _COMMAND_SERVERS

    if _COMMAND_SERVERS is None:
        import command_server

        _COMMAND_SERVERS = command_server.CommandServers()
    return _COMMAND_SERVERS


def python_argv(env=None) -> list:
    """What to put where ``[sys.executable]`` was in a child's command
    line (``subprocess.run(python_argv(env) + ["-c", CODE], env=env)``):
    a shim whose command is a child forked from a server that imported
    TensorFlow, Keras and bilm_keras once (``tests/command_server.py``),
    so it starts in ~0.1 s instead of 3-4. ``env``: the child's
    environment (default ``os.environ``; one server per environment that
    differs in what is read at import). Timeouts, ``capture_output``,
    ``send_signal``, ``kill`` and return codes work as with a fresh
    interpreter; what a fork cannot be (another environment, an option
    but ``-c``/``-m``) runs in a fresh interpreter by itself."""
    return [command_servers().python(os.environ if env is None else env)]


def user_env() -> dict:
    """The environment a user's command runs in: this checkout's package
    (whatever is installed) and the command's own TF log level, not
    conftest's."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT)] + os.environ.get("PYTHONPATH", "").split(
            os.pathsep)))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return env


#: runs ``bilm-keras ARGS`` in a fresh interpreter as ``cli.main`` does,
#: then prints the exit status and which heavy modules were imported
_COMMAND_RUNNER = """
import json, runpy, sys
script, argv = sys.argv[1], sys.argv[2:]
try:
    if script == "-":
        from bilm_keras import cli
        code = cli.main(argv)
    else:  # a bin/ alias, as `python bin/x.py ARGS`
        sys.argv = [script] + argv
        runpy.run_path(script, run_name="__main__")
        code = 0
except SystemExit as e:
    code = e.code
heavy = sorted(m for m in ("tensorflow", "keras", "numpy", "h5py",
                          "apache_beam") if m in sys.modules)
print(json.dumps({"code": code, "heavy": heavy}))
"""


def run_command(args, script="-"):
    """``bilm-keras ARGS`` (or ``script``, a ``bin/`` alias, with ARGS) in
    a fresh interpreter: ``(exit status, heavy modules imported, stdout,
    stderr)``."""
    # a fresh interpreter, not python_argv(): what the command imports is
    # the point, and a command server's child has imported everything
    proc = subprocess.run(
        [sys.executable, "-c", _COMMAND_RUNNER, script, *map(str, args)],
        cwd=REPO_ROOT, env=user_env(), capture_output=True, text=True,
        timeout=300)
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report["code"], report["heavy"], proc.stdout, proc.stderr


def run_bench_script(script: str, *args, one_line: bool = True) -> dict:
    """``bench/SCRIPT ARGS`` (:func:`python_argv`) on TensorFlow's
    backend: the JSON report on its last line of stdout (asserted its only
    line where ``one_line``); a failed run fails the test with its
    stderr."""
    env = dict(os.environ, KERAS_BACKEND="tensorflow",
               TF_CPP_MIN_LOG_LEVEL="2")
    # the script a child of the command server; its own measurement
    # children (``--_measure``, ``--_as_user``: they time the imports)
    # fresh interpreters, as the script starts them; its untimed helper
    # children (random weights written) forked too, through the shim
    # (bench/common.py ``helper_python``)
    from common import HELPER_PYTHON_VARIABLE  # bench/common.py

    shim = python_argv(env)
    env[HELPER_PYTHON_VARIABLE] = shim[0]
    proc = subprocess.run(
        shim + [str(REPO_ROOT / "bench" / script), *map(str, args)],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    if one_line:
        assert len(lines) == 1
    return json.loads(lines[-1])


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


def training_run(train_dir, options, *, sparse_gradients=True,
                 dropout_seed=None, **model_kwargs):
    """``(lm, train_step, batches, states)`` on the fixture corpus, seeded
    (model, softmax sampler and data: seed 0) for a step-by-step run."""
    import keras
    import tensorflow as tf

    from bilm_keras.data.tf_dataset import make_tf_dataset
    from bilm_keras.data.vocab_for_options import load_vocab
    from bilm_keras.training.inputs import make_dataset
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


def bilm_tf_state(checkpoint) -> tuple:
    """``({variable path: weight}, {variable path: Adagrad accumulator})``
    of a :class:`~bilm_keras.weights.bilm_tf_checkpoint.BilmTFCheckpoint`,
    in our layout (the HDF5 table's ``to_keras``; a padding row's
    accumulator is bilm-tf's initial 1.0), all in memory."""
    weights, accumulators = {}, {}
    for entry in checkpoint.variables:
        name = entry.checkpoint_name
        weights[entry.variable_path] = entry.to_keras(
            checkpoint.read_tensor(name))
        value = entry.to_keras(checkpoint.read_tensor(name + "/Adagrad"))
        value[: entry.padding_rows] = 1.0
        accumulators[entry.variable_path] = value
    return weights, accumulators


def hdf5_datasets(path) -> dict:
    """Every dataset of an HDF5 file, by its path in the file, as numpy
    arrays (or scalars)."""
    import h5py

    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()])
                     if isinstance(obj, h5py.Dataset) else None)
    return out


def assert_plain_test_figures(save_dir, vocab_file, test_prefix, *,
                              n_tokens, perplexities):
    """``evaluate`` without ``stateful`` at batch sizes 1, 2 and 256: each
    time ``n_tokens`` scored and each direction's figure of
    ``perplexities`` (``{direction: perplexity}``) to 1e-5."""
    from bilm_keras.training import evaluate

    for batch_size in (1, 2, 256):
        got = evaluate(save_dir=str(save_dir), vocab_file=str(vocab_file),
                       test_prefix=str(test_prefix), batch_size=batch_size)
        assert got["n_tokens"] == n_tokens, batch_size
        for direction, value in perplexities.items():
            assert got[f"{direction}_perplexity"] == pytest.approx(
                value, rel=1e-5), (batch_size, direction)


#: the options.json a conversion of the ELMoForManyLangs fixture's
#: tiny.model writes (its config.json and dictionaries, by design)
MANYLANGS_TINY_OPTIONS = {
    "lstm": {"dim": 64, "projection_dim": 16, "n_layers": 2, "cell_clip": 3,
             "proj_clip": 3, "use_skip_connections": True},
    "char_cnn": {"embedding": {"dim": 6},
                 "filters": [[1, 4], [2, 8], [3, 16], [4, 32]],
                 "n_highway": 2, "n_characters": 107,
                 "max_characters_per_token": 20, "activation": "relu"},
    "elmoformanylangs": {"char_dic": "char.dic", "word_dic": "word.dic",
                         "word_embedding_dim": 8, "n_words": 78},
    "bidirectional": True, "dropout": 0.1,
}

# ------------------------------------------------ reduced precision
#: the bounds of a reduced precision's vectors against float32's (per
#: token, tests/layers/test_precision.py says where they come from)
MEDIAN_COSINE = 0.9999
WORST_COSINE = 0.999
MAX_RELATIVE_ERROR = 0.05


def token_distances(reference, got):
    """Per token (rows of the last axis): cosine and relative error of
    ``got`` to ``reference``, in float64, independently of the code under
    test. ``reference``, ``got``: lists of arrays of the same shapes."""
    import numpy as np

    cosines, relative = [], []
    for a, b in zip(reference, got):
        assert a.shape == b.shape
        a = np.asarray(a, np.float64).reshape(-1, a.shape[-1])
        b = np.asarray(b, np.float64).reshape(-1, b.shape[-1])
        norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        cosines.append((a * b).sum(1) / np.maximum(norms, 1e-30))
        relative.append(np.abs(b - a).max(1)
                        / np.maximum(np.abs(a).max(1), 1e-30))
    return np.concatenate(cosines), np.concatenate(relative)


def near_float32_failures(reference, got, what) -> list[str]:
    """What is wrong with ``got`` as a reduced-precision ``reference``:
    [] when it is within the bounds."""
    import numpy as np

    if not all(np.isfinite(b).all() for b in got):
        return [f"{what}: not finite (an overflow)"]
    cosine, relative = token_distances(reference, got)
    failures = []
    if not np.median(cosine) >= MEDIAN_COSINE:
        failures.append(f"{what}: median cosine {np.median(cosine):.7f}")
    if not cosine.min() >= WORST_COSINE:
        failures.append(f"{what}: worst cosine {cosine.min():.7f}")
    if not relative.max() <= MAX_RELATIVE_ERROR:
        failures.append(f"{what}: relative error {relative.max():.4f}")
    return failures


def assert_near_float32(reference, got, what):
    assert not near_float32_failures(reference, got, what)


def counted_calls(monkeypatch, owner, name: str) -> list:
    """owner.name wrapped for the test: returns the list of the first
    argument of each call, which grows as it is called."""
    calls, function = [], getattr(owner, name)

    def counted(first, *args, **kwargs):
        calls.append(first)
        return function(first, *args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls
