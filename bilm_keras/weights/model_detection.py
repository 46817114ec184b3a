"""What wrote a model's files, and where its parts are: one answer.

:func:`detect_model` looks at a path once and returns a
:class:`DetectedModel`, the family and the parts found. Every command and
every reader asks it, then branches on :attr:`DetectedModel.family` in one
place. The families, told apart in this order:

=========================  ===============================================
:data:`PADDLENLP`          a PaddleNLP 2.x ``.pdparams``: the file, the
                           file less its suffix, or its run's save_dir
                           (``final.pdparams``, else the highest step)
:data:`ELMOFORMANYLANGS`   ``config.json`` beside ``encoder.pkl`` and
                           ``token_embedder.pkl``, as HIT-SCIR releases
                           them
:data:`TFHUB_TF1`          a TF1 Hub module: ``saved_model.pb`` (a TF2
                           SavedModel alone is refused where it is read)
:data:`PADDLE_FLUID`       a Fluid persistables directory, the baike model
:data:`BILM_TF`            a bilm-tf model folder: an options JSON and a
                           weights HDF5
:data:`OUR_RUN`            our training's save_dir: ``options.json`` and
                           checkpoints whose variables are ``weights/...``
:data:`TF1_CHECKPOINT`     bilm-tf's training save_dir, either generation of
                           its ``lm/...`` names; DeepPavlov's LM checkpoint
                           among them, kept in ``saves/``
=========================  ===============================================

Files only, and no TensorFlow: a checkpoint's variable names come from its
index (:mod:`~bilm_keras.weights.checkpoint_files`), so a command asks
before it loads anything. A save_dir may hold checkpoints of two writers
(a bilm-tf run continued by ours): the family is that of the checkpoint
used, the newest that reads whole or the one named.

"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from typing import Dict, Optional, Tuple

from bilm_keras._utils.problem_list import name_list, problem_list
from bilm_keras.options import OPTIONS_FILE
from bilm_keras.weights.bilm_tf_names import (
    GLOBAL_STEP,
    LM_SCOPE,
    TF_1_2,
    TF_1_5,
    lstm_generation,
)
from bilm_keras.weights.checkpoint_files import (
    DEEPPAVLOV_SAVES,
    CheckpointIndexError,
    checkpoint_damage,
    list_checkpoints,
    read_checkpoint_index,
    resolve_checkpoint,
)

logger = logging.getLogger(__name__)

# ------------------------------------------------------------- the families
#: a bilm-tf model folder: options JSON and weights HDF5, used as it is
BILM_TF = "bilm-tf"
ELMOFORMANYLANGS = "elmoformanylangs"
PADDLE_FLUID = "paddle-fluid"
PADDLENLP = "paddlenlp"
#: bilm-tf's training checkpoint (``lm/...``), DeepPavlov's among them
TF1_CHECKPOINT = "tf1-checkpoint"
#: a TF1 Hub module (Google's ``google/elmo``, DeepPavlov's)
TFHUB_TF1 = "tfhub-tf1"
#: a save_dir our training wrote
OUR_RUN = "bilm-keras-run"
#: the families whose parts are Paddle's
PADDLE = (PADDLE_FLUID, PADDLENLP)
#: the families a ``--save_dir`` may name: a trained run, whoever wrote it
RUNS = (OUR_RUN, TF1_CHECKPOINT, PADDLE_FLUID, PADDLENLP)
#: the families converted on first use (the rest are used as they are)
CONVERTED = (ELMOFORMANYLANGS, PADDLE_FLUID, PADDLENLP, TF1_CHECKPOINT,
             TFHUB_TF1)

# ------------------------------------------------------ the files they hold
#: the part of our run's checkpoint that holds the model's variables
#: (:data:`bilm_keras.training.run_checkpoint.PARTS`)
WEIGHTS = "weights"
PDPARAMS_SUFFIX = ".pdparams"
#: the files a Fluid persistables directory of the baike model is told by:
#: its embedding and its first lstmp layer
BAIKE_FILES = ("embedding_para", "fw_layer1_gate_w", "lstmp_0.w_0")
MANYLANGS_CONFIG = "config.json"
MANYLANGS_PKL = ("token_embedder.pkl", "encoder.pkl")
SAVED_MODEL = "saved_model.pb"
WEIGHT_SUFFIXES = (".hdf5", ".h5")
#: options JSON files larger than this are not options (skipped unread)
_MAX_OPTIONS_BYTES = 1 << 20
#: the generations of a bilm-tf training checkpoint's LSTM names
CHECKPOINT_GENERATIONS = (TF_1_5, TF_1_2)


class ModelDetectionError(ValueError):
    """A path that holds no model of a known family, or two candidates
    for one of its parts."""


class CheckpointFileError(ValueError):
    """A save_dir's checkpoint that is missing, unreadable or does not fit
    its options (the message names the file, the variable and both
    shapes)."""


@dataclasses.dataclass(frozen=True)
class SaveDirCheckpoint:
    """The checkpoint a save_dir holds, and who wrote it.

    Attributes:
        path: str. The checkpoint's prefix (``save_dir/model.ckpt-N``).
        kind: str. :data:`OUR_RUN` or :data:`TF1_CHECKPOINT`.
        generation: str or None. :data:`TF_1_5` or :data:`TF_1_2` for
            bilm-tf's. None for ours.
        shapes: dict. ``{variable name: shape}`` of every tensor in it.
        damaged: tuple. ``(prefix, what is wrong)`` of each newer
            checkpoint that does not read whole and was passed over,
            newest first.
    """

    path: str
    kind: str
    generation: Optional[str]
    shapes: Dict[str, Tuple[int, ...]]
    damaged: Tuple[Tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        """The checkpoint's file name prefix (``model.ckpt-40``)."""
        return os.path.basename(self.path)

    def fallback_note(self) -> Optional[str]:
        """One line saying which newer checkpoints were passed over and
        which is used instead. None when none was."""
        if not self.damaged:
            return None
        passed = problem_list([problem for _, problem in self.damaged],
                              most=3)
        return (f"WARNING: the latest checkpoint does not read whole "
                f"({passed}); using {self.name}, the newest that does")

    def require_latest(self, save_dir: str) -> None:
        """Refuses a checkpoint that newer damaged ones were passed over
        for: a command that writes a model out for others does, since its
        output would pass for the latest model.

        Raises:
            CheckpointFileError: naming the damaged one and this one.
        """
        if not self.damaged:
            return
        latest, problem = self.damaged[0]
        raise CheckpointFileError(
            f"{save_dir}: the latest checkpoint {os.path.basename(latest)} "
            f"does not read whole ({problem}); the newest that does is "
            f"{self.name}: name it to use it (--checkpoint {self.name})")

    @property
    def global_step(self) -> Optional[int]:
        """bilm-tf's ``global_step`` (stored as a float32), or None."""
        if GLOBAL_STEP not in self.shapes:
            return None
        import tensorflow as tf

        return int(round(float(
            tf.train.load_checkpoint(self.path).get_tensor(GLOBAL_STEP))))


@dataclasses.dataclass(frozen=True)
class DetectedModel:
    """What wrote a path's files, and where its parts are.

    Attributes:
        family: str. One of the families above, e.g. :data:`OUR_RUN`.
        given: str. The path as given.
        model_dir: str. The folder holding the model's files.
        options_file: str or None. The options JSON of a bilm-tf model or
            a TensorFlow run.
        weight_file: str or None. A bilm-tf model's weights HDF5.
        vocab_file: str or None. The one ``vocab*.txt`` beside the model.
        checkpoint: str or None. A Paddle model's checkpoint (the Fluid
            directory or the ``.pdparams``), or the newest TF1 checkpoint
            beside a bilm-tf model's files.
        run_checkpoint: SaveDirCheckpoint or None. A TensorFlow run's
            checkpoint, the one a command uses; for a bilm-tf model
            folder, the checkpoint beside its weights when it reads
            whole.
    """

    family: str
    given: str
    model_dir: str
    options_file: Optional[str] = None
    weight_file: Optional[str] = None
    vocab_file: Optional[str] = None
    checkpoint: Optional[str] = None
    run_checkpoint: Optional[SaveDirCheckpoint] = None

    @property
    def is_paddle(self) -> bool:
        """bool. A Paddle checkpoint, read by the Paddle readers."""
        return self.family in PADDLE

    @property
    def is_run(self) -> bool:
        """bool. A trained run that a ``--save_dir`` may name."""
        return self.family in RUNS

    @property
    def deeppavlov(self) -> bool:
        """bool. DeepPavlov's layout: the checkpoint in ``saves/``."""
        return (self.run_checkpoint is not None and os.path.basename(
            os.path.dirname(self.run_checkpoint.path)) == DEEPPAVLOV_SAVES)


def detect_model(path: str | os.PathLike, *,
                 checkpoint: Optional[str] = None) -> DetectedModel:
    """What wrote the files at ``path``, and where its parts are.

    Args:
        path: a folder, a ``.pdparams`` file or its prefix.
        checkpoint: str or None. The checkpoint of a TensorFlow run to
            use (``model-200``, ``model.ckpt-40``). None takes the newest
            that reads whole; newer damaged ones are kept in
            :attr:`SaveDirCheckpoint.damaged`.

    Raises:
        ModelDetectionError: no model of a known family, or two candidate
            options or weight files.
        CheckpointFileError: a run whose checkpoint is missing, damaged or
            of variables no family has.
        PaddleFormatError: a folder of several ``.pdparams``, none of them
            ``final`` or a step number.
        SettingError: no checkpoint of that name, for field
            ``checkpoint``.
    """
    given = os.fspath(path)
    if not os.path.exists(given) and not os.path.isfile(
            given + PDPARAMS_SUFFIX):
        raise ModelDetectionError(f"{given}: no such file or directory")
    found = _detect(given, label=given, shown=given, checkpoint=checkpoint)
    if found is None:
        raise ModelDetectionError(
            f"{given}: expected a model ({_EXPECTED}), found none "
            f"(contents: {_contents(given)})")
    if found.deeppavlov:
        logger.info("%s: reading the checkpoint in %s, beside options.json "
                    "as DeepPavlov's ELMo saves it", given,
                    os.path.dirname(found.run_checkpoint.path))
    return found


def find_model(root: str | os.PathLike, *,
               label: Optional[str] = None) -> DetectedModel:
    """The one model in ``root`` or in a folder directly below it, as an
    extracted archive holds it (most hold one top folder). Folders named
    ``__MACOSX`` or starting with ``.`` are skipped.

    Args:
        label: what errors call ``root`` (default: its path), e.g. the
            archive or URL it was extracted from.

    Raises:
        ModelDetectionError: no model, or more than one.
    """
    root = os.fspath(root)
    label = label or root
    found = []
    model = _detect(root, label=label, shown="./", run_options=True)
    if model is not None:
        found.append(("./", model))
    for name in sorted(os.listdir(root)):
        sub = os.path.join(root, name)
        if name.startswith(".") or name == "__MACOSX" \
                or not os.path.isdir(sub) or os.path.islink(sub):
            continue
        model = _detect(sub, label=label, shown=f"{name}/",
                        run_options=True)
        if model is not None:
            found.append((f"{name}/", model))
    if not found:
        raise ModelDetectionError(
            f"{label}: expected a model at its root or inside one folder "
            f"({_EXPECTED}), found none (contents: {_contents(root)})")
    if len(found) > 1:
        models = ", ".join(f"{where} ({model.family})"
                           for where, model in found)
        raise ModelDetectionError(
            f"{label}: expected one model, found {len(found)}: {models}")
    return found[0][1]


_EXPECTED = (
    "bilm-tf: an options JSON and a weights HDF5 or a TF1 checkpoint; "
    "ELMoForManyLangs: config.json and .pkl files; Paddle: a Fluid "
    "ELMo checkpoint or a .pdparams; a TF1 Hub module: "
    "tfhub_module.pb and saved_model.pb")


def _contents(folder: str) -> str:
    if not os.path.isdir(folder):
        return "a file"
    listing = sorted(
        name + ("/" if os.path.isdir(os.path.join(folder, name)) else "")
        for name in os.listdir(folder))
    return name_list(listing, most=12, empty="nothing")


def _detect(path: str, *, label: str, shown: str,
            checkpoint: Optional[str] = None,
            run_options: bool = False) -> Optional[DetectedModel]:
    """The model at ``path`` itself, or None. ``run_options``: a
    TensorFlow run needs its options JSON, as in an archive, where a TF1
    Hub module's ``variables/`` is a checkpoint too."""
    if not os.path.isdir(path):
        pdparams = locate_pdparams(path)
        if pdparams is None:
            return None
        return DetectedModel(PADDLENLP, path, os.path.dirname(pdparams),
                             vocab_file=_vocab(os.path.dirname(pdparams)),
                             checkpoint=pdparams)
    files = sorted(name for name in os.listdir(path)
                   if os.path.isfile(os.path.join(path, name)))
    paths = {name: os.path.join(path, name) for name in files}
    if MANYLANGS_CONFIG in paths and any(p in paths for p in MANYLANGS_PKL):
        return DetectedModel(ELMOFORMANYLANGS, path, path)
    if SAVED_MODEL in paths:
        return DetectedModel(TFHUB_TF1, path, path)
    vocab = _vocab(path)
    if is_baike_checkpoint(files):
        return DetectedModel(PADDLE_FLUID, path, path, vocab_file=vocab,
                             checkpoint=path)
    pdparams = locate_pdparams(path)
    if pdparams is not None:
        return DetectedModel(PADDLENLP, path, path, vocab_file=vocab,
                             checkpoint=pdparams)
    weights = [paths[n] for n in files if n.lower().endswith(WEIGHT_SUFFIXES)]
    options = [paths[n] for n in files
               if n.lower().endswith(".json") and _is_options_json(paths[n])]
    options_file = (_one(label, shown, "options JSON", options)
                    if options else None)
    if weights and options:
        if len(weights) > 1:
            # e.g. bilm-tf's test model: lm_weights.hdf5 beside embeddings
            weights = ([p for p in weights if _has_bilm_tf_weights(p)]
                       or weights)
        listed = [p for p in list_checkpoints(path)
                  if os.path.isfile(p + ".index")]
        return DetectedModel(
            BILM_TF, path, path, options_file=options_file,
            weight_file=_one(label, shown, "weights HDF5", weights),
            vocab_file=vocab, checkpoint=listed[0] if listed else None,
            run_checkpoint=_beside_weights(path) if listed else None)
    if (not list_checkpoints(path) and OPTIONS_FILE not in paths) or (
            run_options and options_file is None):
        return None  # no run: no checkpoint, no options.json
    # a run's save_dir: its checkpoint says who wrote it
    found = locate_checkpoint(path, checkpoint=checkpoint)
    return DetectedModel(found.kind, path, path, options_file=options_file,
                         vocab_file=vocab, run_checkpoint=found)


def _beside_weights(folder: str) -> Optional[SaveDirCheckpoint]:
    """The TF1 checkpoint a model folder ships beside its weights, for
    ``train --init_checkpoint``; None when none reads whole: the weights
    are the model."""
    try:
        return locate_checkpoint(folder)
    except CheckpointFileError:
        return None


def is_baike_checkpoint(names) -> bool:
    """Whether a directory's file names are the baike model's
    (:data:`BAIKE_FILES`)."""
    return set(BAIKE_FILES) <= set(names)


#: the name run_pretrain.py gives its last checkpoint
FINAL_STEM = "final"


def locate_pdparams(path: str | os.PathLike) -> str | None:
    """The ``.pdparams`` a PaddleNLP checkpoint path names, else None.

    Accepted as PaddleNLP's own scripts name them:

    * the file.
    * the file without its suffix (``--init_from_ckpt checkpoints/10000``).
    * the run's ``--save_dir``. There ``final.pdparams`` is taken, else
      the highest step (``20000.pdparams`` over ``10000.pdparams``).

    Raises:
        PaddleFormatError: a directory of ``.pdparams`` files none of
            which is ``final`` or a step number, and more than one.
    """
    path = os.fspath(path)
    if os.path.isfile(path):
        return path if path.endswith(PDPARAMS_SUFFIX) else None
    if os.path.isfile(path + PDPARAMS_SUFFIX):
        return path + PDPARAMS_SUFFIX
    if not os.path.isdir(path):
        return None
    stems = [n[:-len(PDPARAMS_SUFFIX)] for n in os.listdir(path)
             if n.endswith(PDPARAMS_SUFFIX)
             and os.path.isfile(os.path.join(path, n))]
    if not stems:
        return None
    if FINAL_STEM in stems:
        chosen = FINAL_STEM
    elif any(stem.isdigit() for stem in stems):
        chosen = max((s for s in stems if s.isdigit()), key=int)
    elif len(stems) == 1:
        chosen = stems[0]
    else:
        # here, not at the top: the Paddle readers' modules import numpy
        from bilm_keras.weights.paddle_model import PaddleFormatError

        found = name_list(sorted(s + PDPARAMS_SUFFIX for s in stems))
        raise PaddleFormatError(
            f"{path}: expected final.pdparams or STEP.pdparams (a "
            f"run_pretrain.py save_dir), found {found}; name the file")
    return os.path.join(path, chosen + PDPARAMS_SUFFIX)


def _vocab(folder: str) -> Optional[str]:
    """The one ``vocab*.txt`` of ``folder``, else None."""
    vocabs = sorted(n for n in os.listdir(folder)
                    if "vocab" in n.lower() and n.lower().endswith(".txt")
                    and os.path.isfile(os.path.join(folder, n)))
    return os.path.join(folder, vocabs[0]) if len(vocabs) == 1 else None


def _is_options_json(path: str) -> bool:
    try:
        if os.path.getsize(path) > _MAX_OPTIONS_BYTES:
            return False
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(value, dict) and isinstance(value.get("lstm"), dict)


def _has_bilm_tf_weights(path: str) -> bool:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return "RNN_0" in f
    except OSError:
        return False


def _one(label: str, shown: str, what: str, found: list) -> str:
    if len(found) > 1:
        names = ", ".join(sorted(os.path.basename(p) for p in found))
        raise ModelDetectionError(
            f"{label}: {shown}: expected one {what}, found {len(found)}: "
            f"{names}")
    return found[0]


# ----------------------------------------------- a TensorFlow run's checkpoint
def locate_checkpoint(save_dir: str | os.PathLike, *,
                      checkpoint: Optional[str] = None
                      ) -> SaveDirCheckpoint:
    """A save_dir's newest checkpoint that reads whole, and who wrote it.

    The save_dir's checkpoints, ours and bilm-tf's, are taken newest
    first (:func:`~bilm_keras.weights.checkpoint_files.list_checkpoints`,
    which reads DeepPavlov's ``saves/`` too). Each is checked for a
    missing or cut-short ``.index`` or ``.data`` file before its variables
    are listed; the damaged newer ones are kept in
    :attr:`SaveDirCheckpoint.damaged`. The writer comes from the variable
    names: ours are ``weights/...``, bilm-tf's ``lm/...``, whose LSTM
    names give the generation.

    Args:
        checkpoint: use this checkpoint, not the newest, e.g.
            ``model-200``, ``model.ckpt-40`` or a path. It must read whole.

    Raises:
        CheckpointFileError: no checkpoint, or none that reads whole; the
            named one damaged; or variables of neither writer.
        SettingError: no checkpoint of that name, for field
            ``checkpoint``.
    """
    save_dir = os.fspath(save_dir)
    if not os.path.isdir(save_dir):
        raise CheckpointFileError(
            f"{save_dir}: no such directory (expected a save_dir with a "
            "checkpoint)")
    if checkpoint is not None:
        prefix = resolve_checkpoint(save_dir, checkpoint)
        problem = checkpoint_damage(prefix)
        if problem is not None:
            raise CheckpointFileError(
                f"{prefix}: the checkpoint does not read whole ({problem})")
        return _identify(prefix, damaged=())
    candidates = list_checkpoints(save_dir)
    if not candidates:
        raise CheckpointFileError(
            f"{save_dir}: no checkpoint found (expected a 'checkpoint' file, "
            "or model-N.index and its .data as our training writes them, "
            "or bilm-tf's model.ckpt-N.index)")
    damaged = []
    for prefix in candidates:
        problem = checkpoint_damage(prefix)
        if problem is None:
            break
        damaged.append((prefix, problem))
    else:
        raise CheckpointFileError(
            f"{save_dir}: no checkpoint reads whole ("
            + problem_list([problem for _, problem in damaged], most=3)
            + ")")
    return _identify(prefix, damaged=tuple(damaged))


def _identify(prefix: str, *, damaged) -> SaveDirCheckpoint:
    """The writer and generation of a whole checkpoint, from its names."""
    try:
        shapes = read_checkpoint_index(prefix).shapes()
    except (OSError, CheckpointIndexError) as e:
        raise CheckpointFileError(
            f"{prefix}: not a readable TensorFlow checkpoint ({e})") from None
    names = sorted(shapes)
    if any(name.startswith(WEIGHTS + "/") for name in names):
        return SaveDirCheckpoint(prefix, OUR_RUN, None, shapes, damaged)
    generation = lstm_generation(names, generations=CHECKPOINT_GENERATIONS)
    if generation is not None:
        return SaveDirCheckpoint(prefix, TF1_CHECKPOINT, generation, shapes,
                                 damaged)
    # the names a user would recognise first (not TF's bookkeeping)
    shown = [n for n in names if n not in (GLOBAL_STEP,
                                           "_CHECKPOINTABLE_OBJECT_GRAPH")
             and not n.startswith("save_counter/")][:5]
    raise CheckpointFileError(
        f"{prefix}: neither a bilm_keras nor a bilm-tf checkpoint "
        f"(expected '{WEIGHTS}/...' or bilm-tf's '{LM_SCOPE}...' LSTM "
        f"variables; found {len(names)} variable(s): "
        f"{', '.join(shown) or 'none'}"
        f"{', ...' if len(names) > len(shown) else ''})")


def as_detected(model: str | os.PathLike | DetectedModel, *,
                checkpoint: Optional[str] = None) -> DetectedModel:
    """``model`` as a :class:`DetectedModel`: one given is taken as it
    is, a path is detected here, once (``checkpoint`` as
    :func:`detect_model` takes it).

    Raises:
        ValueError: a ``checkpoint`` beside a model detected already, whose
            checkpoint was chosen then.
    """
    if isinstance(model, DetectedModel):
        if checkpoint is not None:
            raise ValueError(
                f"checkpoint: expected None for a model detected already "
                f"({model.given}), found {checkpoint!r}")
        return model
    return detect_model(model, checkpoint=checkpoint)
