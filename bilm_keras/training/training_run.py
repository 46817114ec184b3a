"""The settings of one training run, as one value: :class:`TrainingRun`
(pure Python, no TensorFlow: ``bilm-keras train`` builds and checks it
before TensorFlow is imported)."""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Optional, Sequence, Tuple

from bilm_keras._utils.fast_precision import DEFAULT_PRECISION, PRECISIONS
from bilm_keras._utils.settings import SettingError, check_choice, check_int

#: the choices of ``softmax_bias`` (``init_weights``: the new softmax's
#: bias; :mod:`bilm_keras.training.adaptation`)
SOFTMAX_BIASES = ("unigram", "zeros")

#: a seed NumPy and ``keras.utils.set_random_seed`` take
MAX_SEED = 2**32 - 1
#: the integer settings of a run, ``{field: (minimum, maximum)}`` with
#: None for no maximum: the one statement of their ranges, which
#: ``bilm-keras train`` gives its flags. A field whose default is None may
#: be None.
INT_RANGES = {
    "n_gpus": (0, None), "batch_size": (1, None), "n_epochs": (1, None),
    "n_train_tokens": (1, None), "save_every": (1, None),
    "log_every": (1, None), "max_to_keep": (2, None), "seed": (0, MAX_SEED),
    "freeze_lm_steps": (0, None), "intra_op_threads": (0, None),
    "inter_op_threads": (0, None), "max_steps": (1, None),
}


class SettingConflict(SettingError):
    """A setting that does not go with another.

    Attributes:
        other: str. The setting it conflicts with.
        role: str or None. What ``field`` is of ``other``, which it needs.
            None: the two exclude each other.
    """

    def __init__(self, field: str, reason: str, *, other: str,
                 role: Optional[str] = None):
        super().__init__(field, reason)
        self.other = other
        self.role = role

    def __reduce__(self):
        return _conflict, (self.field, self.reason, self.other, self.role)


def _conflict(field, reason, other, role) -> SettingConflict:
    return SettingConflict(field, reason, other=other, role=role)


@dataclasses.dataclass(frozen=True)
class TrainingRun:
    """Everything a training run needs besides the model's options.

    :func:`~bilm_keras.training.train` and
    :func:`~bilm_keras.training.restart` take it. ``bilm-keras train``
    builds it from its flags in ``cli/_training_flags.py``
    ``training_run``. Each field is defined and documented here alone. It
    is checked when built, and a bad field raises
    :class:`~bilm_keras._utils.settings.SettingError` naming it, which
    ``bilm-keras train`` shows as the flag's error. Paths are kept as
    given. That the files exist is checked when the run reads them.

    Fields:
        train_prefix: str. Glob of training shards, UTF-8, one
            whitespace-tokenized sentence per line.
        vocab_file: str. Vocabulary with ``<S>``, ``</S>``, ``<UNK>``.
        save_dir: str. Checkpoints, ``options.json`` and TensorBoard logs.
        n_gpus: int >= 0 or None. GPUs to use, see
            :func:`~bilm_keras.training.make_strategy`. None means every
            visible GPU, 0 the CPU.
        devices: tuple of str or None. The devices to train on, instead of
            ``n_gpus``.
        batch_size, n_epochs, n_train_tokens: int >= 1 or None. They
            override the options. ``n_train_tokens`` is counted from the
            corpus when neither gives it.
        save_every: int >= 1. Steps between checkpoints, with one more at
            the end. Default 1250.
        log_every: int >= 1. Steps between progress lines and TensorBoard
            points. Default 100.
        max_to_keep: int >= 2. The newest checkpoints kept in
            ``save_dir``. At least two, so that one is whole should the
            newest be damaged. Default 5.
        seed: int in ``0..2**32-1`` or None. The initialisation, data-order
            and dropout seed. None means random.
        fast_path: bool. The LSTMs statically unrolled, both directions
            batched and the char-CNN run once per distinct token. It
            defaults to :class:`LanguageModel`'s ``unroll_windows`` and
            ``dedup_tokens``. False runs the plain per-direction loop. It
            gives the same numbers, see tests/training/test_fast_path.py,
            but slower, see ``bench/train_throughput.py --compare``.
        init_weights: str or None. Domain adaptation from a bilm-tf or
            AllenNLP ``lm_weights.hdf5`` matching the options, which the
            backbone starts from. The softmax is new, for ``vocab_file``.
        init_checkpoint: str or None. Domain adaptation from a training
            checkpoint. That is a bilm-tf save_dir and its
            ``model.ckpt-N``, e.g. the published training checkpoints,
            whose weights the backbone starts from. The softmax is new, for
            ``vocab_file``, except the rows of the words ``init_vocab_file``
            shares with it. Not with ``init_weights``.
        init_vocab_file: str or None. With ``init_checkpoint``, the
            vocabulary that checkpoint was trained with, since a save_dir
            holds none. The softmax rows of the words it shares with
            ``vocab_file`` are kept, all of them for the same vocabulary.
            None means a new softmax.
        freeze_lm_steps: int >= 0. With ``init_weights`` or
            ``init_checkpoint``, the first global steps train only the
            softmax. Default 0.
        softmax_bias: ``"unigram"`` or ``"zeros"``. The new softmax's bias
            with ``init_weights`` or ``init_checkpoint``. ``"unigram"``,
            the default, is the log target frequencies of
            ``train_prefix``. ``"zeros"`` is bilm-tf's. Rows kept from a
            checkpoint keep theirs.
        intra_op_threads, inter_op_threads: int >= 0 or None. TensorFlow's
            CPU thread pools, threads per op and ops at a time. 0 means
            TensorFlow's default. None means half the cores per op and two
            ops at a time when no GPU is visible.
        max_steps: int >= 1 or None. The most steps this call runs,
            counted from the step it starts at: 0 for a new run, the
            checkpoint's for a restart. The run then writes a checkpoint
            and returns, and :func:`~bilm_keras.training.restart`
            continues it. It splits a long run into jobs of bounded time,
            e.g. a queue's time limit, or tries a setting for a few steps.
            None, the default, runs every step of ``n_epochs``.
        precision: str. What the model's products compute in, see
            :mod:`bilm_keras.layers.precision`. ``"float32"`` is the
            default and exact. ``"mixed_bfloat16"`` suits AMX CPUs and GPUs
            of compute capability 8.0+. ``"mixed_float16"`` suits GPUs of
            7.0+, with dynamic loss scaling. The weights and Adagrad's
            accumulators stay float32, so a run may be continued at
            another precision.
    """

    train_prefix: str
    vocab_file: str
    save_dir: str
    n_gpus: Optional[int] = None
    devices: Optional[Tuple[str, ...]] = None
    batch_size: Optional[int] = None
    n_epochs: Optional[int] = None
    n_train_tokens: Optional[int] = None
    save_every: int = 1250
    log_every: int = 100
    max_to_keep: int = 5
    seed: Optional[int] = None
    fast_path: bool = True
    init_weights: Optional[str] = None
    init_checkpoint: Optional[str] = None
    init_vocab_file: Optional[str] = None
    freeze_lm_steps: int = 0
    softmax_bias: str = "unigram"
    intra_op_threads: Optional[int] = None
    inter_op_threads: Optional[int] = None
    max_steps: Optional[int] = None
    precision: str = DEFAULT_PRECISION

    def __post_init__(self):
        check_choice("precision", self.precision, PRECISIONS)
        for name in ("train_prefix", "vocab_file", "save_dir"):
            self._set(name, _path(name, getattr(self, name)))
        for name in ("init_weights", "init_checkpoint", "init_vocab_file"):
            if getattr(self, name) is not None:
                self._set(name, _path(name, getattr(self, name)))
        if self.devices is not None:
            if isinstance(self.devices, str) or not isinstance(
                    self.devices, Sequence) or not all(
                    isinstance(d, str) for d in self.devices):
                raise SettingError("devices", f"expected a list of device "
                                              f"names, found "
                                              f"{self.devices!r}")
            self._set("devices", tuple(self.devices))
        for field in dataclasses.fields(self):
            if field.name in INT_RANGES:
                minimum, maximum = INT_RANGES[field.name]
                check_int(field.name, getattr(self, field.name), minimum,
                          optional=field.default is None, maximum=maximum)
        if not isinstance(self.fast_path, bool):
            raise SettingError("fast_path", f"expected True or False, found "
                                            f"{self.fast_path!r}")
        check_choice("softmax_bias", self.softmax_bias, SOFTMAX_BIASES)
        if self.init_weights is not None and (
                self.init_checkpoint is not None):
            raise SettingConflict(
                "init_checkpoint", f"expected none with init_weights (a run "
                f"starts from one), found {self.init_checkpoint!r}",
                other="init_weights")
        if self.init_vocab_file is not None and self.init_checkpoint is None:
            raise SettingConflict(
                "init_vocab_file", f"expected none without init_checkpoint "
                f"(the vocabulary of its softmax), found "
                f"{self.init_vocab_file!r}",
                other="init_checkpoint", role="the vocabulary")
        if not self.adapts and self.freeze_lm_steps:
            raise SettingError("freeze_lm_steps",
                               f"expected 0 without init_weights or "
                               f"init_checkpoint, found "
                               f"{self.freeze_lm_steps}")

    @property
    def adapts(self) -> bool:
        """A new run from a trained LM (``init_weights`` or
        ``init_checkpoint``)."""
        return (self.init_weights is not None
                or self.init_checkpoint is not None)

    @functools.cached_property
    def init_model(self):
        """DetectedModel or None. What ``init_checkpoint`` holds and who
        wrote it, detected once
        (:func:`~bilm_keras.weights.model_detection.detect_model`). None:
        no ``init_checkpoint``.

        Raises:
            ModelDetectionError: no such path, or no model there.
            CheckpointFileError: a save_dir whose checkpoint does not read.
            PaddleFormatError: a folder of several ``.pdparams``, none of
                them ``final`` or a step number.
        """
        if self.init_checkpoint is None:
            return None
        from bilm_keras.weights.model_detection import detect_model

        return detect_model(self.init_checkpoint)

    def _set(self, name, value):
        object.__setattr__(self, name, value)

    def replace(self, **changes) -> "TrainingRun":
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


def _path(name: str, value) -> str:
    if isinstance(value, (str, os.PathLike)) and os.fspath(value) != "":
        return os.fspath(value)
    raise SettingError(name, f"expected a path, found {value!r}")
