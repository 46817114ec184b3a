"""Importing allenai/bilm-tf's unmodified ``bilm`` package on TensorFlow 2.

bilm-tf is TensorFlow 1 code. It runs on TensorFlow 2.21 through
``tensorflow.compat.v1`` in graph mode, with ``TF_USE_LEGACY_KERAS=1`` set
before TensorFlow is first imported (``tf_keras`` then supplies TF1's
``nn.rnn_cell`` classes). ``sys.modules["tensorflow"]`` is pointed at
``tf.compat.v1`` before ``bilm`` is imported, so its ``import tensorflow as
tf`` gets the v1 API: that is the only shim; bilm-tf's code runs as
written.

Used by ``tests/fixtures/bilm_tf_run/make_fixtures.py`` (and the same
approach as ``train_vs_bilm_tf.py``'s child). Standard library at import
time; TensorFlow is imported by :func:`import_bilm_tf`.
"""

import os
import sys

#: what the process running bilm-tf needs in its environment before
#: TensorFlow is imported
BILM_TF_ENV = {"TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}


def check_bilm_tf_dir(bilm_tf_dir) -> str:
    """``bilm_tf_dir`` made absolute; ValueError unless it holds ``bilm/``."""
    if not bilm_tf_dir or not os.path.isfile(
            os.path.join(bilm_tf_dir, "bilm", "training.py")):
        raise ValueError(
            f"--bilm_tf_dir: expected a checkout of allenai/bilm-tf (with "
            f"bilm/training.py), found {bilm_tf_dir!r}")
    return os.path.abspath(bilm_tf_dir)


def import_bilm_tf(bilm_tf_dir):
    """``(v1, bilm.training, bilm.data)``: bilm-tf's modules on TF 2.

    The process must have :data:`BILM_TF_ENV` in its environment before
    TensorFlow is imported (RuntimeError otherwise: the TF 2 ``keras``
    would be used and ``nn.rnn_cell`` would be missing).
    """
    bilm_tf_dir = check_bilm_tf_dir(bilm_tf_dir)
    if os.environ.get("TF_USE_LEGACY_KERAS") != "1":
        raise RuntimeError(
            "bilm-tf needs TF_USE_LEGACY_KERAS=1 in the environment before "
            "TensorFlow is imported")
    import tensorflow

    v1 = tensorflow.compat.v1
    v1.disable_v2_behavior()
    v1.logging.set_verbosity(v1.logging.ERROR)
    sys.modules["tensorflow"] = v1  # bilm's "import tensorflow as tf"
    sys.path.insert(0, bilm_tf_dir)
    import bilm.data
    import bilm.training

    return v1, bilm.training, bilm.data


def train_bilm_tf(training, data_module, workdir: str, n_batches: int,
                  on_batch) -> dict:
    """bilm-tf's ``train()``, unchanged, on ``workdir``'s
    ``options.json``, ``vocab.txt`` and ``train.txt``, for ``n_batches``
    batches; returns the options it trained with.

    ``training`` and ``data_module`` are :func:`import_bilm_tf`'s.
    ``on_batch(i)`` is called as its loop asks for batch ``i`` (after
    batch ``i - 1``'s session run). Its progress prints are silenced; its
    checkpoint goes to ``workdir/bilm_tf_run``.
    """
    import json

    with open(os.path.join(workdir, "options.json")) as f:
        options = json.load(f)
    options["n_epochs"] = 1
    options["n_train_tokens"] = (n_batches * options["batch_size"]
                                 * options["unroll_steps"])
    vocab = training.load_vocab(os.path.join(workdir, "vocab.txt"), 50)
    data = data_module.BidirectionalLMDataset(
        os.path.join(workdir, "train.txt"), vocab, test=False,
        shuffle_on_load=True)
    iter_batches = data.iter_batches

    def watched_batches(*args, **kwargs):
        for i, batch in enumerate(iter_batches(*args, **kwargs)):
            on_batch(i)
            yield batch

    data.iter_batches = watched_batches
    save_dir = os.path.join(workdir, "bilm_tf_run")
    os.makedirs(save_dir, exist_ok=True)
    with open(os.devnull, "w") as devnull:  # its progress prints
        stdout, sys.stdout = sys.stdout, devnull
        try:
            training.train(options, data, 1, save_dir, save_dir)
        finally:
            sys.stdout = stdout
    return options
