"""Find the model in a folder, and its format, from the files themselves.
The folder is an extracted archive or a local directory.

A model sits at the folder's root or inside one folder below it. Most
archives hold one top folder, e.g. ``zhs.model/``. The formats are these.

* ``bilm-tf``: an options JSON and a weights HDF5. The options are a JSON
  object with an ``"lstm"`` section, as in AllenNLP's, NLPL's own ELMo
  zips, or a model bilm_keras trained, dumped or converted. The weights
  are ``.hdf5`` or ``.h5``. Where a folder has several, the one with
  bilm-tf's ``RNN_0`` group is taken. A ``vocab*.txt`` beside them is the
  vocabulary.
* ``elmoformanylangs``: ``config.json``, upstream's training arguments,
  beside ``encoder.pkl`` and ``token_embedder.pkl``, as HIT-SCIR releases
  them. It is converted with
  :func:`bilm_keras.weights.manylangs_conversion.convert_manylangs`, which
  finds the model config as upstream does. A stale absolute
  ``config_path`` falls back to the file in the folder, then to upstream's
  packaged configs.
* ``paddle-fluid``: a Fluid ``save_persistables`` checkpoint of Paddle's
  ELMo, the baike model, with ``embedding_para``, ``fw_layer1_gate_w``,
  ``lstmp_0.w_0``, .... A ``vocab*.txt`` beside it is the vocabulary.
* ``paddlenlp``: one PaddleNLP 2.x ``.pdparams`` file and a
  ``vocab*.txt``. Both Paddle formats are converted with
  :func:`bilm_keras.weights.paddle_conversion.read_paddle`.
* ``tf1-checkpoint``: an options JSON and a bilm-tf TF1 training
  checkpoint with no weights HDF5. DeepPavlov's LM-ready archives hold
  ``options.json``, ``vocab.txt`` and ``saves/model.*``. It is dumped once
  with :func:`bilm_keras.weights.bilm_tf_checkpoint.dump_tf1_checkpoint`.
* ``tfhub-tf1``: a TF1 Hub module, ``saved_model.pb`` beside
  ``tfhub_module.pb`` and ``variables/``. It is converted with
  :func:`bilm_keras.pretrained.tfhub_conversion.convert_tfhub`. A
  ``saved_model.pb`` alone, a TF2 SavedModel, is refused there.

Folders named ``__MACOSX`` or starting with ``.`` are skipped. An error
names the folder and what was found when there is no model, or two
models, at the root and in a folder or in two folders. So does a bilm-tf
folder with two candidate options or weight files.
"""

from __future__ import annotations

import dataclasses
import json
import os

from bilm_keras._utils.problem_list import name_list
from bilm_keras.pretrained.errors import PretrainedModelError

BILM_TF = "bilm-tf"
ELMOFORMANYLANGS = "elmoformanylangs"
PADDLE_FLUID = "paddle-fluid"
PADDLENLP = "paddlenlp"
TF1_CHECKPOINT = "tf1-checkpoint"
#: a TF1 Hub module (Google's ``google/elmo``, DeepPavlov's)
TFHUB_TF1 = "tfhub-tf1"
#: the formats converted on first use (the rest are used as they are)
CONVERTED = (ELMOFORMANYLANGS, PADDLE_FLUID, PADDLENLP, TF1_CHECKPOINT,
             TFHUB_TF1)
PDPARAMS_SUFFIX = ".pdparams"

MANYLANGS_CONFIG = "config.json"
MANYLANGS_PKL = ("token_embedder.pkl", "encoder.pkl")
#: a SavedModel's graph: a TF1 Hub module's, with ``tfhub_module.pb``
#: beside it (without it, a TF2 SavedModel: the conversion says so)
SAVED_MODEL = "saved_model.pb"
WEIGHT_SUFFIXES = (".hdf5", ".h5")
#: options JSON files larger than this are not options (skipped unread)
_MAX_OPTIONS_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class ModelLayout:
    """Where a model is in a folder, and its format.

    Args:
        format: ``"bilm-tf"``, ``"elmoformanylangs"``, ``"paddle-fluid"``,
            ``"paddlenlp"`` or ``"tfhub-tf1"``.
        model_dir: the folder holding the model's files, e.g. a Fluid
            checkpoint's variables.
        options_file / weight_file / vocab_file: a bilm-tf model's files.
            ``vocab_file`` is None where it has none. All are None for an
            ELMoForManyLangs model, whose files the conversion finds. A
            Paddle model's ``vocab_file`` is the ``vocab*.txt`` beside it,
            if any.
        checkpoint: a Paddle model's checkpoint, the Fluid directory or
            the ``.pdparams`` file. Or the newest TF1 checkpoint's prefix
            found beside a bilm-tf model's files. Else None.
    """

    format: str
    model_dir: str
    options_file: str | None = None
    weight_file: str | None = None
    vocab_file: str | None = None
    checkpoint: str | None = None


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


def _one(label: str, folder: str, what: str, found: list[str]) -> str:
    if len(found) > 1:
        names = ", ".join(sorted(os.path.basename(p) for p in found))
        raise PretrainedModelError(
            f"{label}: {folder}: expected one {what}, found {len(found)}: "
            f"{names}")
    return found[0]


def _layout_of(folder: str, label: str, shown: str) -> ModelLayout | None:
    """The model in ``folder`` itself, or None."""
    files = sorted(name for name in os.listdir(folder)
                   if os.path.isfile(os.path.join(folder, name)))
    paths = {name: os.path.join(folder, name) for name in files}
    if MANYLANGS_CONFIG in paths and any(p in paths for p in MANYLANGS_PKL):
        return ModelLayout(ELMOFORMANYLANGS, folder)
    if SAVED_MODEL in paths:
        return ModelLayout(TFHUB_TF1, folder)
    vocabs = [paths[n] for n in files
              if "vocab" in n.lower() and n.lower().endswith(".txt")]
    vocab = vocabs[0] if len(vocabs) == 1 else None
    # here, not at the top: `bilm-keras models` imports this module and
    # must not import numpy
    from bilm_keras.weights.paddle_baike import is_baike_checkpoint

    if is_baike_checkpoint(files):
        return ModelLayout(PADDLE_FLUID, folder, vocab_file=vocab,
                           checkpoint=folder)
    pdparams = [paths[n] for n in files if n.endswith(PDPARAMS_SUFFIX)]
    if pdparams:
        return ModelLayout(
            PADDLENLP, folder, vocab_file=vocab,
            checkpoint=_one(label, shown, "PaddleNLP .pdparams", pdparams))
    weights = [paths[n] for n in files if n.lower().endswith(WEIGHT_SUFFIXES)]
    options = [paths[n] for n in files
               if n.lower().endswith(".json") and _is_options_json(paths[n])]
    from bilm_keras.weights.checkpoint_files import list_checkpoints

    checkpoints = [p for p in list_checkpoints(folder)
                   if os.path.isfile(p + ".index")]
    checkpoint = checkpoints[0] if checkpoints else None
    if options and not weights and checkpoint is not None:
        return ModelLayout(
            TF1_CHECKPOINT, folder,
            options_file=_one(label, shown, "options JSON", options),
            vocab_file=vocab, checkpoint=checkpoint)
    if not (weights and options):
        return None
    if len(weights) > 1:
        # e.g. bilm-tf's test model: lm_weights.hdf5 beside embedding files
        weights = [p for p in weights if _has_bilm_tf_weights(p)] or weights
    return ModelLayout(
        BILM_TF, folder,
        options_file=_one(label, shown, "options JSON", options),
        weight_file=_one(label, shown, "weights HDF5", weights),
        vocab_file=vocab, checkpoint=checkpoint)


def find_model_layout(root: str, *, label: str | None = None
                      ) -> ModelLayout:
    """The one model in ``root`` or in a folder directly below it.

    Args:
        root: the folder to look in.
        label: what errors call ``root`` (default: its path), e.g. the
            archive or URL it was extracted from.

    Raises:
        PretrainedModelError: no model, or more than one.
    """
    label = label or root
    found = []
    layout = _layout_of(root, label, "./")
    if layout is not None:
        found.append(("./", layout))
    for name in sorted(os.listdir(root)):
        sub = os.path.join(root, name)
        if name.startswith(".") or name == "__MACOSX" \
                or not os.path.isdir(sub) or os.path.islink(sub):
            continue
        layout = _layout_of(sub, label, f"{name}/")
        if layout is not None:
            found.append((f"{name}/", layout))
    if not found:
        listing = sorted(
            name + ("/" if os.path.isdir(os.path.join(root, name)) else "")
            for name in os.listdir(root))
        shown = name_list(listing, most=12, empty="nothing")
        raise PretrainedModelError(
            f"{label}: expected a model at its root or inside one folder "
            "(bilm-tf: an options JSON and a weights HDF5 or a TF1 "
            "checkpoint; "
            "ELMoForManyLangs: config.json and .pkl files; Paddle: a Fluid "
            "ELMo checkpoint or a .pdparams; a TF1 Hub module: "
            "tfhub_module.pb and saved_model.pb), found none "
            f"(contents: {shown})")
    if len(found) > 1:
        models = ", ".join(f"{where} ({layout.format})"
                           for where, layout in found)
        raise PretrainedModelError(
            f"{label}: expected one model, found {len(found)}: {models}")
    return found[0][1]
