"""One function from a model SPEC to a local model in bilm-tf's layout:
:func:`resolve_model`.

::

    from bilm_keras.pretrained import resolve_model
    model = resolve_model("manylangs-zh")     # downloaded, converted, cached
    model.options_file, model.weight_file     # .../models/manylangs-zh/...
    resolve_model("https://example.org/my_elmo.zip")
    resolve_model("zhs.model.tar.bz2")        # a local archive
    resolve_model("zhs.model/")               # a local model directory

SPEC is tried in this order:

0. an ``hf://OWNER/REPO[@REVISION]`` handle of a repository on the
   Hugging Face Hub holding bilm-tf's files (:mod:`.hf_hub`), read in
   huggingface_hub's cache.
1. an ``http://`` or ``https://`` URL of an archive: ``.zip``,
   ``.tar.gz``, ``.tar.bz2`` or any tar, as the contents decide.
2. a registry name
   (:func:`~bilm_keras.pretrained.registry.registered_models`), which
   ``bilm-keras models`` lists. A local folder of the same name is reached
   as ``./NAME``.
3. a local directory holding a model, at its root or one folder down. A
   Paddle Fluid checkpoint directory is one.
4. a PaddleNLP ``.pdparams`` file.
5. a local archive.

The format comes from the files
(:mod:`bilm_keras.weights.model_detection`):

* a bilm-tf model, options JSON and weights HDF5, is used as it is.
* an ELMoForManyLangs model, ``config.json`` and ``.pkl`` files, is
  converted once with
  :func:`~bilm_keras.weights.manylangs_conversion.convert_manylangs`.
* a Paddle model, a Fluid persistables checkpoint or a ``.pdparams``, is
  converted once with
  :func:`~bilm_keras.weights.paddle_conversion.read_paddle`.

The converted model is cached. A Paddle model's vocabulary is cached with
it where one lies beside it. The baike model's must be passed where it is
used. A local bilm-tf directory is used in place, and nothing is cached.
Everything else lands in the model cache (:mod:`.model_cache`), where the
next call finds it with no network access. Registry URLs go through
``$BILM_KERAS_MODEL_MIRROR`` (:func:`.registry.mirrored_url`).

Nothing here imports TensorFlow. numpy and h5py are imported only to
convert an ELMoForManyLangs or Paddle model, or to tell a weights HDF5
from other HDF5 files.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import logging
import os
import re
import sys
from collections.abc import Callable

from bilm_keras._utils.version import __version__
from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.pretrained.archives import ARCHIVE_SUFFIXES, extract_archive
from bilm_keras.pretrained.download import download_file
from bilm_keras.pretrained.errors import PretrainedModelError
from bilm_keras.pretrained.hf_hub import (
    hub_model_folder,
    is_hub_spec,
    parse_hub_spec,
)
from bilm_keras.pretrained.keras_preset_files import preset_class
from bilm_keras.pretrained.model_cache import (
    default_cache_dir,
    entry_dir,
    entry_lock,
    hashed_key,
    install_entry,
    is_complete,
    read_manifest,
    staging_dir,
    write_manifest,
)
from bilm_keras.pretrained.registry import (
    RegisteredModel,
    mirror_from_environment,
    mirrored_url,
    registered_model,
    registered_models,
)
from bilm_keras.weights.model_detection import (
    BILM_TF,
    ELMOFORMANYLANGS,
    OUR_RUN,
    PADDLE_FLUID,
    PADDLENLP,
    PDPARAMS_SUFFIX,
    TF1_CHECKPOINT,
    TFHUB_TF1,
    CheckpointFileError,
    DetectedModel,
    ModelDetectionError,
    detect_model,
    find_model,
)
from bilm_keras.weights.model_folder import WEIGHT_FILE

logger = logging.getLogger(__name__)

#: how to list the registry's names, for the unknown-name error
LIST_COMMAND = "bilm-keras models"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: the kinds of SPEC, in the order they are tried (:func:`check_model_spec`)
URL, NAME, DIRECTORY, PDPARAMS, ARCHIVE, HUB = (
    "url", "name", "directory", "pdparams", "archive", "hf")


@dataclasses.dataclass(frozen=True)
class ResolvedModel:
    """A model on this machine in bilm-tf's layout: what
    ``BidirectionalLanguageModel(options_file, weight_file)``, ``bilm-keras
    embed --options_file --weight_file`` and ``train --init_weights`` take.

    Args:
        name: the registry name, else the URL's, archive's or folder's name
            (without its archive suffix).
        format: the format the model was published in: ``"bilm-tf"``,
            ``"elmoformanylangs"``, ``"paddle-fluid"`` or ``"paddlenlp"``.
            The last three are converted. A converted ELMoForManyLangs
            model's ``options.json`` has an ``elmoformanylangs`` section
            naming ``char.dic`` and ``word.dic`` beside it. The files here
            are bilm-tf's layout either way.
        directory: the folder holding the files: ``<cache>/models/<key>``,
            or a local bilm-tf directory used in place.
        options_file: the options JSON (``options.json`` in the cache).
        weight_file: the weights HDF5 (``lm_weights.hdf5`` in the cache).
        vocab_file: a bilm-tf model's ``vocab*.txt`` where it ships one
            (for ``TokenBatcher`` / ``dump-tokens``), else None.
        spec: the SPEC as given.
        cached: whether ``directory`` is in the model cache.
        options: the :class:`BiLMOptions` of ``options_file``, parsed
            once, here.
    """

    name: str
    format: str
    directory: str
    options_file: str
    weight_file: str
    vocab_file: str | None
    spec: str
    cached: bool
    options: BiLMOptions = dataclasses.field(compare=False, repr=False)


# --- the SPEC -------------------------------------------------------------

def _strip_archive_suffix(name: str) -> str:
    lower = name.lower()
    for suffix in sorted(ARCHIVE_SUFFIXES, key=len, reverse=True):
        if lower.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _unknown_spec(spec: str) -> PretrainedModelError:
    looks_like_name = (os.sep not in spec and "/" not in spec
                       and _strip_archive_suffix(spec) == spec)
    if looks_like_name:
        names = [name for model in registered_models().values()
                 for name in (model.name, *model.aliases)]
        close = difflib.get_close_matches(spec, names,
                                          n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        return PretrainedModelError(
            f"{spec!r}: unknown model name{hint}; list the names with "
            f"`{LIST_COMMAND}` (or pass an http(s) URL, an archive or a "
            "model directory)")
    return PretrainedModelError(
        f"{spec}: no such file or directory (expected a registry name, an "
        "http(s) URL, a local archive (.zip, .tar.gz, .tar.bz2) or a model "
        "directory)")


# --- the cache ------------------------------------------------------------

def _from_entry(entry: str, spec: str) -> ResolvedModel:
    manifest = read_manifest(entry)
    files = {"options_file": OPTIONS_FILE, "weight_file": WEIGHT_FILE}
    vocab = manifest.get("vocab_file")
    paths = {field: os.path.join(entry, name) for field, name in files.items()}
    for path in paths.values():
        if not os.path.isfile(path):
            raise PretrainedModelError(
                f"{entry}: expected a cached model with "
                f"{os.path.basename(path)}, found none; remove {entry} to "
                "fetch it again")
    return ResolvedModel(
        name=str(manifest.get("name", os.path.basename(entry))),
        format=str(manifest.get("format", BILM_TF)),
        directory=entry,
        vocab_file=os.path.join(entry, vocab) if vocab else None,
        spec=spec, cached=True,
        options=_check_options(paths["options_file"], entry, None), **paths)


def _manifest(name: str, fmt: str, spec: str, sources, vocab_file) -> dict:
    return {
        "name": name,
        "format": fmt,
        "spec": spec,
        "sources": list(sources),
        "options_file": OPTIONS_FILE,
        "weight_file": WEIGHT_FILE,
        "vocab_file": vocab_file,
        # datetime.UTC is Python 3.11+; setup.cfg allows 3.10
        "created": datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017
        .strftime("%Y-%m-%dT%H:%M:%SZ"),
        "bilm_keras_version": __version__,
    }


#: the download notes shown on request (``progress``): a ``.progress``
#: logger, on stderr like a progress bar (:mod:`bilm_keras._utils.
#: console_log`)
progress_logger = logging.getLogger(__name__ + ".progress")


def _say(progress: bool, message: str) -> None:
    if progress:
        progress_logger.info(message)
    else:
        logger.debug(message)


#: a build: staging folder -> (the complete model folder, its manifest)
Build = Callable[[str], tuple[str, dict]]


def _cached(cache_dir: str, key: str, spec: str, build: Build,
            progress: bool) -> ResolvedModel:
    """The cached model ``key``, built with ``build`` first if missing,
    under the key's lock (:mod:`.model_cache`)."""
    entry = entry_dir(cache_dir, key)
    if is_complete(entry):
        return _from_entry(entry, spec)

    def waiting():
        _say(progress, f"{spec}: waiting for another process to fetch it "
                       f"into {entry}")

    with entry_lock(cache_dir, key, on_wait=waiting):
        if not is_complete(entry):
            with staging_dir(cache_dir, key) as staging:
                model_dir, manifest = build(staging)
                write_manifest(model_dir, manifest)
                install_entry(model_dir, entry)
    return _from_entry(entry, spec)


# --- building a model folder ------------------------------------------------

def _relabel(message: str, folder: str | None, label: str) -> str:
    """``message`` with the temporary path ``folder`` (a folder or a file)
    shown as ``label``: ``<folder>/a/b`` as ``<label>: a/b``. None: the
    message as it is (a user's own files)."""
    if folder is None:
        return message
    return message.replace(folder + os.sep, label + ": ").replace(
        folder, label)


def _check_options(options_file: str, label: str,
                   folder: str | None) -> BiLMOptions:
    try:
        return BiLMOptions.from_json(options_file)
    except ValueError as e:
        raise PretrainedModelError(
            _relabel(str(e), folder, label)) from None


def _check_weights(weight_file: str, label: str,
                   folder: str | None) -> None:
    import h5py

    if not h5py.is_hdf5(weight_file):
        shown = _relabel(weight_file, folder, label)
        raise PretrainedModelError(
            f"{shown}: expected a weights HDF5 file, found "
            f"{os.path.getsize(weight_file):,} bytes of something else")


#: the metadata NLPL's zips carry beside the model (not read)
NLPL_META = "meta.json"


def _settle_options(options_file: str, name: str) -> None:
    """Sets ``n_characters`` 261 (as trained) to 262 (bilm-tf's value for
    prediction, which both describe) in a copy we own, saying so."""
    import json

    with open(options_file, encoding="utf-8") as f:
        options = json.load(f)
    char_cnn = options.get("char_cnn")
    if isinstance(char_cnn, dict) and char_cnn.get("n_characters") == 261:
        char_cnn["n_characters"] = 262
        with open(options_file, "w", encoding="utf-8") as f:
            json.dump(options, f)
        logger.info("%s: options give n_characters 261 (as trained); set "
                    "to 262, bilm-tf's value for prediction", name)


def _find_model(root: str, label: str) -> DetectedModel:
    """The one model in ``root`` or a folder below it, as
    :func:`~bilm_keras.weights.model_detection.find_model` finds it;
    a training run of ours is refused (``dump-weights`` writes its
    model)."""
    try:
        found = find_model(root, label=label)
    except (ModelDetectionError, CheckpointFileError) as e:
        raise PretrainedModelError(str(e)) from None
    if found.family == OUR_RUN:
        raise PretrainedModelError(
            f"{label}: expected a published model, found a bilm_keras "
            "training run (BidirectionalLanguageModel.from_pretrained "
            "reads it; `bilm-keras dump-weights` writes its model)")
    return found


def _note_extras(layout: DetectedModel, model_dir: str, name: str) -> None:
    """One line for each file of a published archive beside the model."""
    if os.path.isfile(os.path.join(model_dir, NLPL_META)):
        logger.info("%s: %s is the publisher's metadata, kept beside the "
                    "model and not read", name, NLPL_META)
    if layout.checkpoint is not None:
        rel = os.path.relpath(layout.checkpoint, layout.model_dir)
        logger.info("%s: the TF1 checkpoint %s beside the weights is kept "
                    "in the model's folder, for train --init_checkpoint",
                    name, rel)
    if layout.vocab_file is None:
        logger.info("%s: no vocabulary in the archive (character input "
                    "needs none)", name)


def _bilm_tf_folder(layout: DetectedModel, staging: str, label: str,
                    root: str, name: str) -> tuple[str, str | None]:
    """Checks an extracted bilm-tf model, then moves it into ``staging``.

    Errors are shown against ``label``, with its files relative to the
    archive's ``root``. Its folder, ours under ``tmp/``, moves to
    ``staging/model`` with the two files under the cache's names. One
    line each says what was changed. Returns the folder and the
    vocabulary's file name or None."""
    _check_options(layout.options_file, label, root)
    _check_weights(layout.weight_file, label, root)
    model_dir = os.path.join(staging, "model")
    os.rename(layout.model_dir, model_dir)
    moved = {path: os.path.join(model_dir, os.path.basename(path))
             for path in (layout.options_file, layout.weight_file,
                          layout.vocab_file) if path}
    os.replace(moved[layout.options_file],
               os.path.join(model_dir, OPTIONS_FILE))
    if os.path.basename(layout.weight_file) != WEIGHT_FILE:
        logger.info("%s: %s is the weights, saved as %s", name,
                    os.path.basename(layout.weight_file), WEIGHT_FILE)
    os.replace(moved[layout.weight_file],
               os.path.join(model_dir, WEIGHT_FILE))
    _settle_options(os.path.join(model_dir, OPTIONS_FILE), name)
    _note_extras(layout, model_dir, name)
    vocab = (os.path.basename(layout.vocab_file) if layout.vocab_file
             and os.path.isfile(moved[layout.vocab_file]) else None)
    return model_dir, vocab


def _dump_checkpoint(layout: DetectedModel, staging: str, label: str,
                     root: str | None, name: str, *,
                     move: bool) -> tuple[str, str | None]:
    """A bilm-tf TF1 training checkpoint without weights HDF5, as in
    DeepPavlov's LM-ready archives.

    Its folder becomes ``staging/model`` as it is, a save_dir that
    ``train --init_checkpoint`` takes. The checkpoint's dump lies beside
    it as ``lm_weights.hdf5``. Returns the folder and the vocabulary's
    file name or None."""
    import shutil

    from bilm_keras.weights.bilm_tf_checkpoint import dump_tf1_checkpoint

    _check_options(layout.options_file, label, root)
    model_dir = os.path.join(staging, "model")
    if move:
        os.rename(layout.model_dir, model_dir)
    else:
        shutil.copytree(layout.model_dir, model_dir)
    options = os.path.join(model_dir, os.path.basename(layout.options_file))
    os.replace(options, os.path.join(model_dir, OPTIONS_FILE))
    try:
        prefix = dump_tf1_checkpoint(model_dir,
                                     os.path.join(model_dir, WEIGHT_FILE))
    except ValueError as e:
        raise PretrainedModelError(
            _relabel(str(e), model_dir, label)) from None
    logger.info("%s: the weights are the dump of its TF1 checkpoint %s, "
                "saved as %s beside it", name,
                os.path.relpath(prefix, model_dir), WEIGHT_FILE)
    _settle_options(os.path.join(model_dir, OPTIONS_FILE), name)
    vocab = (os.path.basename(layout.vocab_file) if layout.vocab_file
             else None)
    return model_dir, vocab


def _convert(model_dir: str, staging: str, label: str,
             root: str | None) -> str:
    """Converts the ELMoForManyLangs model in ``model_dir`` into
    ``staging/model``. Errors name ``label``, and the files relative to
    ``root``, an extracted archive's folder. With None, paths stay as they
    are."""
    from bilm_keras.weights.manylangs_conversion import convert_manylangs

    out = os.path.join(staging, "model")
    try:
        convert_manylangs(model_dir, out)
    except ValueError as e:
        message = str(e)
        if root is not None:
            message = message.replace(root + os.sep, "")
        raise PretrainedModelError(
            f"{label}: cannot convert the ELMoForManyLangs model: {message}"
        ) from None
    return out


def _convert_paddle(layout: DetectedModel, staging: str, label: str,
                    root: str | None) -> tuple[str, str | None]:
    """Converts the Paddle checkpoint of ``layout`` into ``staging/model``
    (``vocab.txt`` too where a vocabulary lies beside it). Returns the
    folder and the vocabulary's file name (or None)."""
    from bilm_keras.weights.paddle_conversion import (
        VOCAB_FILE,
        read_paddle,
        write_converted,
    )

    out = os.path.join(staging, "model")
    try:
        model = read_paddle(layout.checkpoint, layout.vocab_file)
        write_converted(model, out)
    except ValueError as e:
        message = str(e)
        if root is not None:
            message = message.replace(root + os.sep, "")
        raise PretrainedModelError(
            f"{label}: cannot convert the Paddle model: {message}") from None
    return out, VOCAB_FILE if model.vocab is not None else None


def _convert_tfhub(layout: DetectedModel, staging: str, label: str,
                   root: str | None) -> str:
    """Converts the TF1 Hub module of ``layout`` into ``staging/model``
    (its learned mix as ``mix.json``)."""
    from bilm_keras.weights.tfhub_module import (
        read_tfhub_module,
        write_converted,
    )

    out = os.path.join(staging, "model")
    try:
        write_converted(read_tfhub_module(layout.model_dir), out)
    except ValueError as e:
        message = str(e)
        if root is not None:
            message = message.replace(root + os.sep, "").replace(root, ".")
        raise PretrainedModelError(
            f"{label}: cannot convert the TF1 Hub module: {message}"
        ) from None
    return out


def _from_archive(archive: str, staging: str, *, name: str, spec: str,
                  label: str, sources, progress: bool,
                  remove_archive: bool) -> tuple[str, dict]:
    """Extracts ``archive`` under ``staging``, finds its model, and builds
    the cached folder (moved as it is, or converted)."""
    extracted = os.path.join(staging, "extracted")
    os.mkdir(extracted)
    extract_archive(archive, extracted, label=label)
    if remove_archive:
        os.remove(archive)  # before the conversion: less disk at the peak
    layout = _find_model(extracted, label)
    if layout.family == ELMOFORMANYLANGS:
        _say(progress, f"{name}: converting the ELMoForManyLangs model")
        model_dir = _convert(layout.model_dir, staging, label, extracted)
        vocab = None
    elif layout.family in (PADDLE_FLUID, PADDLENLP):
        _say(progress, f"{name}: converting the Paddle model")
        model_dir, vocab = _convert_paddle(layout, staging, label, extracted)
    elif layout.family == TF1_CHECKPOINT:
        _say(progress, f"{name}: dumping the TF1 checkpoint's weights")
        model_dir, vocab = _dump_checkpoint(layout, staging, label,
                                            extracted, name, move=True)
    elif layout.family == TFHUB_TF1:
        _say(progress, f"{name}: converting the TF1 Hub module")
        model_dir, vocab = _convert_tfhub(layout, staging, label,
                                          extracted), None
    else:
        model_dir, vocab = _bilm_tf_folder(layout, staging, label,
                                           extracted, name)
    return model_dir, _manifest(name, layout.family, spec, sources, vocab)


# --- the four kinds of SPEC ---------------------------------------------------

def _registered(model: RegisteredModel, spec: str, cache_dir: str,
                mirror: str | None, progress: bool) -> ResolvedModel:
    def build(staging: str) -> tuple[str, dict]:
        try:
            # here, not before: a cached model needs no mirror (nor a
            # valid one)
            urls = [mirrored_url(url, mirror) for url in model.urls]
            if model.archive_parts:
                archive = _joined_parts(urls, staging, model.name, progress,
                                        cache_dir)
                return _from_archive(
                    archive, staging, name=model.name, spec=spec,
                    label=urls[0], sources=urls, progress=progress,
                    remove_archive=True)
            if model.archive_url:
                archive = os.path.join(staging, "archive")
                download_file(urls[0], archive, label=model.name,
                              progress=progress, cache_dir=cache_dir)
                return _from_archive(
                    archive, staging, name=model.name, spec=spec,
                    label=urls[0], sources=urls, progress=progress,
                    remove_archive=True)
            model_dir = os.path.join(staging, "model")
            os.mkdir(model_dir)
            options = os.path.join(model_dir, OPTIONS_FILE)
            weights = os.path.join(model_dir, WEIGHT_FILE)
            download_file(urls[0], options, label=f"{model.name} options",
                          progress=progress, cache_dir=cache_dir)
            download_file(urls[1], weights, label=f"{model.name} weights",
                          progress=progress, cache_dir=cache_dir)
            _check_options(options, urls[0], options)
            _check_weights(weights, urls[1], weights)
            if model.alignment_url:
                _fetch_alignment(urls[2], model_dir, model.name, progress,
                                 cache_dir)
            return model_dir, _manifest(model.name, model.format, spec,
                                        urls, None)
        except PretrainedModelError as e:
            raise PretrainedModelError(f"{model.name}: {e}") from None

    return _cached(cache_dir, model.name, spec, build, progress)


def _fetch_alignment(url: str, model_dir: str, name: str,
                     progress: bool, cache_dir: str) -> None:
    """Downloads a model's published alignment matrix beside its weights
    and checks that it reads as a matrix of the model's output size."""
    from bilm_keras.weights.alignment import (
        ALIGNMENT_FILE, AlignmentError, read_alignment_matrix)

    path = os.path.join(model_dir, ALIGNMENT_FILE)
    download_file(url, path, label=f"{name} alignment", progress=progress,
                  cache_dir=cache_dir)
    options = BiLMOptions.from_json(os.path.join(model_dir, OPTIONS_FILE))
    try:
        read_alignment_matrix(path, 2 * options.lstm.projection_dim)
    except AlignmentError as e:
        raise PretrainedModelError(
            str(e).replace(path, f"{url} ({ALIGNMENT_FILE})")) from None


def _joined_parts(urls, staging: str, name: str, progress: bool,
                  cache_dir: str) -> str:
    """Downloads an archive published in pieces and joins them, in
    order, into ``staging/archive``, saying so in one line."""
    import shutil

    archive = os.path.join(staging, "archive")
    with open(archive, "wb") as out:
        for k, url in enumerate(urls):
            part = os.path.join(staging, f"part-{k:02d}")
            download_file(url, part, label=f"{name} part {k + 1} of "
                          f"{len(urls)}", progress=progress,
                          cache_dir=cache_dir)
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 20)
            os.remove(part)
    logger.info("%s: joined the %d parts of its archive, in order", name,
                len(urls))
    return archive


def _url(url: str, spec: str, cache_dir: str,
         progress: bool) -> ResolvedModel:
    file_name = os.path.basename(url.split("?", 1)[0].rstrip("/")) or "model"
    name = _strip_archive_suffix(file_name)

    def build(staging: str) -> tuple[str, dict]:
        archive = os.path.join(staging, "archive")
        download_file(url, archive, label=file_name, progress=progress,
                      cache_dir=cache_dir)
        return _from_archive(archive, staging, name=name, spec=spec,
                             label=url, sources=[url], progress=progress,
                             remove_archive=True)

    key = hashed_key("url", url, file_name)
    return _cached(cache_dir, key, spec, build, progress)


def _local_archive(path: str, spec: str, cache_dir: str,
                   progress: bool) -> ResolvedModel:
    real = os.path.realpath(path)
    info = os.stat(real)
    file_name = os.path.basename(real)
    name = _strip_archive_suffix(file_name)

    def build(staging: str) -> tuple[str, dict]:
        return _from_archive(real, staging, name=name, spec=spec, label=path,
                             sources=[real], progress=progress,
                             remove_archive=False)

    key = hashed_key("file", f"{real}\0{info.st_size}\0{info.st_mtime_ns}",
                     file_name)
    return _cached(cache_dir, key, spec, build, progress)


def _local_directory(path: str, spec: str, cache_dir: str,
                     progress: bool) -> ResolvedModel:
    layout = _find_model(path, path)
    if layout.family == BILM_TF:  # used in place: nothing to cache
        options = _check_options(layout.options_file, path, None)
        _check_weights(layout.weight_file, path, None)
        return ResolvedModel(
            name=os.path.basename(os.path.abspath(layout.model_dir)),
            format=BILM_TF, directory=os.path.abspath(layout.model_dir),
            options_file=os.path.abspath(layout.options_file),
            weight_file=os.path.abspath(layout.weight_file),
            vocab_file=(os.path.abspath(layout.vocab_file)
                        if layout.vocab_file else None),
            spec=spec, cached=False, options=options)
    model_dir = os.path.realpath(layout.model_dir)
    name = os.path.basename(model_dir)
    files = sorted(os.listdir(model_dir))
    identity = [model_dir] + [
        f"{n}\0{s.st_size}\0{s.st_mtime_ns}"
        for n in files
        for s in [os.stat(os.path.join(model_dir, n))]]

    def build(staging: str) -> tuple[str, dict]:
        if layout.family == ELMOFORMANYLANGS:
            _say(progress, f"{name}: converting the ELMoForManyLangs model")
            out, vocab = _convert(model_dir, staging, path, None), None
        elif layout.family == TF1_CHECKPOINT:
            _say(progress, f"{name}: dumping the TF1 checkpoint's weights")
            out, vocab = _dump_checkpoint(layout, staging, path, None, name,
                                          move=False)
        elif layout.family == TFHUB_TF1:
            _say(progress, f"{name}: converting the TF1 Hub module")
            out, vocab = _convert_tfhub(layout, staging, path, None), None
        else:
            _say(progress, f"{name}: converting the Paddle model")
            out, vocab = _convert_paddle(layout, staging, path, None)
        return out, _manifest(name, layout.family, spec, [model_dir], vocab)

    key = hashed_key("dir", "\n".join(identity), name)
    return _cached(cache_dir, key, spec, build, progress)


def _local_pdparams(path: str, spec: str, cache_dir: str,
                    progress: bool) -> ResolvedModel:
    """A PaddleNLP ``.pdparams`` file (a ``vocab*.txt`` beside it is its
    vocabulary), converted once and cached."""
    real = os.path.realpath(path)
    info = os.stat(real)
    layout = detect_model(real)
    vocab = layout.vocab_file
    name = os.path.basename(real)[: -len(PDPARAMS_SUFFIX)] or "model"
    identity = f"{real}\0{info.st_size}\0{info.st_mtime_ns}"
    if vocab is not None:
        v = os.stat(vocab)
        identity += f"\0{vocab}\0{v.st_size}\0{v.st_mtime_ns}"

    def build(staging: str) -> tuple[str, dict]:
        _say(progress, f"{name}: converting the Paddle model")
        out, vocab_name = _convert_paddle(layout, staging, path, None)
        return out, _manifest(name, PADDLENLP, spec, [real], vocab_name)

    key = hashed_key("file", identity, name)
    return _cached(cache_dir, key, spec, build, progress)


def _hub_repository(spec: str, cache_dir: str,
                    progress: bool) -> ResolvedModel:
    """An ``hf://`` handle's bilm-tf files, read in huggingface_hub's
    cache (:mod:`.hf_hub`); converted formats go to ours."""
    folder = hub_model_folder(spec, progress=progress)
    registered = preset_class(folder)
    if registered is not None:
        raise PretrainedModelError(
            f"{spec}: a Keras preset ({registered}), not a model in "
            "bilm-tf's layout: load it with ELMoEmbedding.from_preset")
    model = _local_directory(folder, spec, cache_dir, progress)
    repo, _ = parse_hub_spec(spec)
    return dataclasses.replace(model, name=repo.split("/", 1)[1])


def resolve_model(spec: str | os.PathLike, *,
                  cache_dir: str | os.PathLike | None = None,
                  mirror: str | None = None,
                  progress: bool | None = None) -> ResolvedModel:
    """A model SPEC -> a local model in bilm-tf's layout. The module doc
    has the kinds of SPEC and the order they are tried in.

    Args:
        spec: a registry name (``"elmo-original"``, ``"manylangs-zh"``), an
            http(s) URL of an archive, an ``hf://OWNER/REPO[@REVISION]``
            handle, a local archive or a local model directory.
        cache_dir: the model cache. The default is ``$BILM_KERAS_CACHE``,
            else ``$XDG_CACHE_HOME/bilm_keras``, else
            ``~/.cache/bilm_keras``.
        mirror: replaces the scheme and host of registry URLs. The default
            is ``$BILM_KERAS_MODEL_MIRROR``, and ``""`` means none.
        progress: progress bars and messages on stderr. None shows them
            only if stderr is a terminal.

    Returns:
        A :class:`ResolvedModel`. A cached model is returned with no
        network access. A missing one is downloaded, and converted, into
        the cache first.

    Raises:
        PretrainedModelError: one line naming the spec, URL or file and
            what was expected. It covers an unknown name, a failed or
            cut-short download, an unsafe or unreadable archive, no model
            or two, and a model that cannot be converted. Nothing is left
            in the cache.
    """
    spec = os.fspath(spec)
    kind = check_model_spec(spec)
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        progress = bool(isatty and isatty())
    if mirror is None:
        mirror = mirror_from_environment()
    cache = (os.path.abspath(os.fspath(cache_dir)) if cache_dir
             else default_cache_dir())
    if kind == URL:
        return _url(spec, spec, cache, progress)
    if kind == HUB:
        return _hub_repository(spec, cache, progress)
    if kind == NAME:
        return _registered(registered_model(spec), spec, cache,
                           mirror or None, progress)
    if kind == DIRECTORY:
        return _local_directory(spec, spec, cache, progress)
    if kind == PDPARAMS:
        return _local_pdparams(spec, spec, cache, progress)
    return _local_archive(spec, spec, cache, progress)



def check_model_spec(spec: str | os.PathLike) -> str:
    """What kind of SPEC ``spec`` is: :data:`URL`, :data:`NAME`,
    :data:`DIRECTORY`, :data:`PDPARAMS` or :data:`ARCHIVE`, tried in that
    order.

    It is found from the text, the registry and the file system alone,
    with no network and no file read. ``bilm-keras`` checks its
    ``--model`` flags with it, before anything is fetched.

    Raises:
        PretrainedModelError: what :func:`resolve_model` would raise
            before fetching. That is an empty spec, a URL whose scheme is
            not http(s), or an unknown name that is no file either. The
            line says how to list the names.
    """
    spec = os.fspath(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise PretrainedModelError(
            f"{spec!r}: expected a model name, URL, archive or directory")
    if is_hub_spec(spec):
        parse_hub_spec(spec)
        return HUB
    if _URL.match(spec):
        scheme = spec.split(":", 1)[0].lower()
        if scheme not in ("http", "https"):
            raise PretrainedModelError(
                f"{spec}: expected an http:// or https:// URL, found the "
                f"scheme {scheme!r}")
        return URL
    if registered_model(spec) is not None:
        return NAME
    if os.path.isdir(spec):
        return DIRECTORY
    if os.path.isfile(spec) and spec.endswith(PDPARAMS_SUFFIX):
        return PDPARAMS
    if os.path.isfile(spec):
        return ARCHIVE
    raise _unknown_spec(spec)
