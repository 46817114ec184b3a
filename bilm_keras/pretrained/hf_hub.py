"""Models on the Hugging Face Hub by handle: ``hf://OWNER/REPO[@REVISION]``.

A repository holds one of two layouts, told from its file list before
anything is downloaded:

* a Keras preset, as ``ELMoEmbedding.save_to_preset`` writes it
  (:mod:`.keras_preset_files`): ``config.json``, ``model.weights.h5``,
  ``preprocessor.json``, ``metadata.json`` and ``assets/tokenizer/``.
* bilm-tf's files: an options JSON and a weights HDF5 under any name,
  e.g. ``options.json`` and ``weights.hdf5``, at the root or one folder
  down, with a ``vocab*.txt`` where one is published. Which JSON and HDF5
  they are is decided on the files, by the detection unit
  (:mod:`bilm_keras.weights.model_detection`).

Only those files are downloaded, into huggingface_hub's own cache
(``$HF_HUB_CACHE``, ``$HF_HOME``), through its ``hf_hub_download``. So
``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HUB_OFFLINE`` work as for any
Hub library. Offline, the revision's snapshot is read from the cache, and
a handle not cached there is an error. It needs the ``hf`` extra
(``pip install 'bilm_keras[hf]'``).

A failed or cut-short download is one :class:`PretrainedModelError` line,
and huggingface_hub's partial file of it is removed, so nothing half
downloaded stays in the cache.
"""

from __future__ import annotations

import glob
import logging
import os
import re

from bilm_keras.pretrained.errors import PretrainedModelError
from bilm_keras.pretrained.keras_preset_files import (
    ASSETS_DIR,
    CONFIG_FILE,
    METADATA_FILE,
    PREPROCESSOR_FILE,
    WEIGHTS_FILE,
    preset_class,
)
from bilm_keras.weights.model_detection import WEIGHT_SUFFIXES

logger = logging.getLogger(__name__)

HUB_PREFIX = "hf://"
#: OWNER/REPO as the Hub allows them, then an optional @REVISION
_HANDLE = re.compile(
    r"^hf://(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)"
    r"(?:@(?P<revision>[^\s@]+))?$")
_INSTALL = "pip install 'bilm_keras[hf]'"


def is_hub_spec(spec) -> bool:
    """Whether ``spec`` is an ``hf://`` handle."""
    return isinstance(spec, str) and spec.lower().startswith(HUB_PREFIX)


def parse_hub_spec(spec: str) -> tuple[str, str | None]:
    """``(OWNER/REPO, REVISION or None)`` of an ``hf://`` handle.

    Raises:
        PretrainedModelError: a handle of another form.
    """
    match = _HANDLE.match(spec)
    if match is None:
        raise PretrainedModelError(
            f"{spec}: expected a Hugging Face handle hf://OWNER/REPO or "
            "hf://OWNER/REPO@REVISION")
    return match["repo"], match["revision"]


def _hub():
    try:
        import huggingface_hub
    except ImportError:
        raise PretrainedModelError(
            f"hf:// handles need huggingface_hub: {_INSTALL}") from None
    return huggingface_hub


def _depth_ok(name: str) -> bool:
    """At the root or one folder down, where model_detection looks."""
    return name.count("/") <= 1


def files_to_fetch(files: list[str], spec: str) -> list[str]:
    """The files of a repository's listing that its model needs.

    Raises:
        PretrainedModelError: a repository with no weights, naming what it
            holds.
    """
    names = set(files)
    if CONFIG_FILE in names and WEIGHTS_FILE in names:  # a Keras preset
        wanted = [CONFIG_FILE, WEIGHTS_FILE]
        wanted += [n for n in (PREPROCESSOR_FILE, METADATA_FILE)
                   if n in names]
        wanted += sorted(n for n in files
                         if n.startswith(ASSETS_DIR + "/"))
        return wanted
    weights = sorted(n for n in files if _depth_ok(n)
                     and n.lower().endswith(WEIGHT_SUFFIXES))
    if not weights:
        shown = ", ".join(sorted(files)[:8]) or "no files"
        more = f" and {len(files) - 8} more" if len(files) > 8 else ""
        raise PretrainedModelError(
            f"{spec}: the repository holds no weights: expected a Keras "
            f"preset ({CONFIG_FILE} + {WEIGHTS_FILE}) or bilm-tf's options "
            f"JSON + a weights HDF5 (.hdf5, .h5), found {shown}{more}")
    side = sorted(n for n in files if _depth_ok(n) and (
        n.lower().endswith(".json") or (
            "vocab" in os.path.basename(n).lower()
            and n.lower().endswith(".txt"))))
    return side + weights


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _remove_partial_files(repo: str, cache_dir) -> None:
    """huggingface_hub's ``.incomplete`` blobs of ``repo``: a download
    cut short leaves one to resume from."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    cache = cache_dir or constants.HF_HUB_CACHE
    folder = os.path.join(os.fspath(cache), repo_folder_name(
        repo_id=repo, repo_type="model"), "blobs")
    for path in glob.glob(os.path.join(folder, "*.incomplete")):
        try:
            os.remove(path)
        except OSError:
            pass


def _remove_fetched(paths: list[str]) -> None:
    """The files a failed call fetched before its failure, blob and
    snapshot link: the cache holds the model whole or not at all."""
    for path in paths:
        blob = os.path.realpath(path)
        for each in (path, blob):
            try:
                os.remove(each)
            except OSError:
                pass


def _hub_error(error: Exception, spec: str, repo: str,
               revision: str | None) -> PretrainedModelError:
    from huggingface_hub import errors

    if isinstance(error, errors.RevisionNotFoundError):
        return PretrainedModelError(
            f"{spec}: no revision {revision!r} in the repository {repo}")
    if isinstance(error, errors.RepositoryNotFoundError):
        return PretrainedModelError(
            f"{spec}: no repository {repo} on the Hub (or it is private "
            "and no token was given)")
    return PretrainedModelError(f"{spec}: {_first_line(error)}")


def hub_model_folder(spec: str, *, cache_dir=None,
                     progress: bool = False) -> str:
    """Downloads the model files of an ``hf://`` handle into
    huggingface_hub's cache and returns the revision's snapshot folder.

    Args:
        spec: ``hf://OWNER/REPO`` or ``hf://OWNER/REPO@REVISION`` (a
            branch, tag or commit).
        cache_dir: huggingface_hub's cache, by default its own.
        progress: say which files are fetched.

    Raises:
        PretrainedModelError: one line for a malformed handle, a missing
            repository or revision, a repository without weights, an
            offline handle not in the cache, or a failed download.
    """
    repo, revision = parse_hub_spec(spec)
    hub = _hub()
    from huggingface_hub import constants, errors

    if constants.HF_HUB_OFFLINE:
        try:
            return hub.snapshot_download(repo, revision=revision,
                                         cache_dir=cache_dir,
                                         local_files_only=True)
        except (errors.LocalEntryNotFoundError, OSError) as e:
            raise PretrainedModelError(
                f"{spec}: not in the Hugging Face cache, and HF_HUB_OFFLINE "
                f"is set ({_first_line(e)})") from None
    try:
        info = hub.HfApi().model_info(repo, revision=revision)
    except Exception as e:  # noqa: BLE001 -- every failure is one line
        raise _hub_error(e, spec, repo, revision) from None
    files = [s.rfilename for s in info.siblings or ()]
    wanted = files_to_fetch(files, spec)
    path, fetched = None, []
    for name in wanted:
        cached = hub.try_to_load_from_cache(repo, name, revision=info.sha,
                                            cache_dir=cache_dir)
        # by the name asked for, so that the cache records where a branch
        # or tag pointed, which offline mode reads
        if progress and not isinstance(cached, str):
            logger.info("%s: fetching %s", spec, name)
        try:
            path = hub.hf_hub_download(repo, name, revision=revision,
                                       cache_dir=cache_dir)
        except Exception as e:  # noqa: BLE001 -- every failure is one line
            _remove_partial_files(repo, cache_dir)
            _remove_fetched(fetched)
            raise PretrainedModelError(
                f"{spec}: {name}: the download failed: {_first_line(e)}"
            ) from None
        if not isinstance(cached, str):
            fetched.append(path)
    # the snapshot's root: the last file's path less its name in the repo
    depth = wanted[-1].count("/") + 1
    for _ in range(depth):
        path = os.path.dirname(path)
    return path


def preset_folder(spec) -> str | None:
    """The local Keras preset folder ``spec`` names, an ``hf://`` handle
    downloaded first, or None when it names no Keras preset."""
    spec = os.fspath(spec)
    if is_hub_spec(spec):
        folder = hub_model_folder(spec)
    elif os.path.isdir(spec):
        folder = spec
    else:
        return None
    return folder if preset_class(folder) is not None else None
