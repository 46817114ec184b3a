"""The model cache: where resolved models live, one folder each.

The root is ``$BILM_KERAS_CACHE``, else ``$XDG_CACHE_HOME/bilm_keras``, else
``~/.cache/bilm_keras``::

    <root>/
      models/<key>/          a complete model, ready to use:
          options.json       bilm-tf's options (+ ``elmoformanylangs`` for a
                             converted model)
          lm_weights.hdf5    bilm-tf's weight layout
          vocab*.txt         a bilm-tf model's vocabulary, where it has one
          char.dic word.dic  a converted ELMoForManyLangs model's dictionaries
          bilm_keras_model.json  what it is and where it came from
      tmp/                   work in progress: downloads, extraction,
                             conversion (a unique folder per attempt,
                             removed when the attempt ends)
      locks/<key>.lock       empty files locked with ``fcntl.flock`` while a
                             process builds ``models/<key>``
      downloads/url-<hash>-<file name>.json  each downloaded URL's sha256
                             and size at its first download, checked on
                             every later download (:func:`check_download`)

Keys:

* a registry name as it is (``elmo-small``, ``manylangs-zh``).
* an archive URL: ``url-<hash>-<file name>``.
* a local archive: ``file-<hash>-<file name>``. The hash covers its path,
  size and mtime, so a changed archive is resolved anew.
* a local ELMoForManyLangs directory: ``dir-<hash>-<folder name>``. The
  hash covers its path and its files' sizes and mtimes.

A model folder appears only by one ``os.rename`` of a complete folder built
under ``tmp/``, on the same file system. So ``models/<key>/`` exists
complete or not at all, and a cached model is used with no network access.
When two processes want the same model, the first takes
``locks/<key>.lock`` and builds it. The second waits on the lock, then
finds the folder and uses it. Where ``fcntl`` or ``flock`` is unavailable,
as on Windows and some network file systems, both may build it. The rename
still leaves one good copy. The later process finds the folder taken,
throws its own away and uses the first (:func:`install_entry`).
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator

from bilm_keras.pretrained.errors import PretrainedModelError

#: the environment variable naming the cache's root
CACHE_ENV = "BILM_KERAS_CACHE"

MODELS = "models"
TMP = "tmp"
LOCKS = "locks"

#: the file in every cached model naming what it is (written last)
MANIFEST = "bilm_keras_model.json"


def default_cache_dir() -> str:
    """``$BILM_KERAS_CACHE``, else ``$XDG_CACHE_HOME/bilm_keras``, else
    ``~/.cache/bilm_keras``, as an absolute path.

    Only an absolute ``XDG_CACHE_HOME`` counts, as the XDG spec says."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    xdg = os.environ.get("XDG_CACHE_HOME")
    if not (xdg and os.path.isabs(xdg)):
        xdg = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "bilm_keras")


def entry_dir(cache_dir: str, key: str) -> str:
    """``<cache_dir>/models/<key>``."""
    return os.path.join(cache_dir, MODELS, key)


def is_complete(entry: str) -> bool:
    """Whether ``entry`` is a complete cached model (it has its manifest)."""
    return os.path.isfile(os.path.join(entry, MANIFEST))


def _safe_label(text: str) -> str:
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", text)
    label = re.sub(r"\.{2,}", ".", label).strip("._-")
    return label[:48] or "model"


def hashed_key(kind: str, identity: str, label: str) -> str:
    """``<kind>-<16 hex of sha256(identity)>-<label>``, a file-name-safe
    key. ``kind`` is ``url``, ``file`` or ``dir``."""
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]
    return f"{kind}-{digest}-{_safe_label(label)}"


def _writable(cache_dir: str, folder: str) -> str:
    path = os.path.join(cache_dir, folder)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise PretrainedModelError(
            f"{cache_dir}: expected a writable model cache (set "
            f"{CACHE_ENV} to another folder), found {e.strerror or e}"
        ) from None
    return path


@contextlib.contextmanager
def entry_lock(cache_dir: str, key: str,
               on_wait: Callable[[], None] | None = None
               ) -> Iterator[None]:
    """Holds ``locks/<key>.lock`` exclusively (``fcntl.flock``) for the
    block. ``on_wait()`` is called once if another process holds it. It is
    a no-op where ``fcntl`` or ``flock`` is unavailable (module doc).
    """
    try:
        import fcntl
    except ImportError:  # Windows: the atomic rename alone
        yield
        return
    path = os.path.join(_writable(cache_dir, LOCKS), f"{key}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:
            if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            # a file system without flock: the atomic rename alone
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def staging_dir(cache_dir: str, key: str) -> Iterator[str]:
    """A new private folder under ``<cache_dir>/tmp/`` for one attempt at
    ``key``, removed with everything in it when the block ends (whether
    its model was installed or the attempt failed)."""
    tmp = _writable(cache_dir, TMP)
    path = tempfile.mkdtemp(prefix=f"{key}.", dir=tmp)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_manifest(model_dir: str, manifest: dict) -> None:
    """Writes ``model_dir/bilm_keras_model.json`` (last, before the
    rename: its presence marks a complete model)."""
    with open(os.path.join(model_dir, MANIFEST), "w", encoding="utf-8",
              newline="\n") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())


def read_manifest(entry: str) -> dict:
    """A cached model's manifest.

    Raises:
        PretrainedModelError: unreadable (a cache changed by hand).
    """
    path = os.path.join(entry, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        manifest = e
    if not isinstance(manifest, dict):
        raise PretrainedModelError(
            f"{path}: expected a cached model's manifest (a JSON object), "
            f"found {manifest!r:.80}; remove {entry} to fetch it again")
    return manifest


def install_entry(model_dir: str, entry: str) -> None:
    """Renames the complete ``model_dir`` (under ``tmp/``) to ``entry``.

    If another process installed ``entry`` first, its copy is kept and
    ``model_dir`` is left to be removed with its staging folder.

    Raises:
        PretrainedModelError: ``entry`` exists but is not a complete model
            (changed by hand).
    """
    os.makedirs(os.path.dirname(entry), exist_ok=True)
    try:
        os.rename(model_dir, entry)
    except OSError as e:
        if e.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EACCES,
                           errno.EPERM):
            raise
        if not is_complete(entry):
            raise PretrainedModelError(
                f"{entry}: expected a complete cached model or no folder, "
                f"found an incomplete one; remove it and try again"
            ) from None


#: the folder of download records: one JSON file per URL, written at the
#: URL's first download
DOWNLOADS = "downloads"


def download_record_path(cache_dir: str, url: str) -> str:
    """``<cache_dir>/downloads/url-<hash>-<file name>.json``: the record
    of ``url``'s first download."""
    name = os.path.basename(url.split("?", 1)[0].rstrip("/")) or "file"
    return os.path.join(cache_dir, DOWNLOADS,
                        hashed_key("url", url, name) + ".json")


def check_download(cache_dir: str, url: str, sha256: str,
                   size: int) -> None:
    """Records ``url``'s sha256 and size at its first download, and checks
    every later download against that record.

    The publishers give no checksums, so the first download is trusted as
    it came: a file that differs later (replaced by its publisher, or
    changed on the way) is refused, with the record to remove if the
    change is expected. Two processes downloading at once: the first
    record written stays, and the other is checked against it.

    Raises:
        PretrainedModelError: ``url`` gave other bytes than at its first
            download (one line: the URL, both sha256s, the record).
    """
    path = download_record_path(cache_dir, url)
    record = {"url": url, "sha256": sha256, "bytes": size,
              "first_downloaded": datetime.datetime.now(
                  datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    folder = _writable(cache_dir, DOWNLOADS)
    fd, tmp = tempfile.mkstemp(prefix=".record.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
        try:
            os.link(tmp, path)  # fails if a record is there: keep it
            return
        except FileExistsError:
            pass
        except OSError:  # no hard links here: a rename, if none is there
            if not os.path.exists(path):
                os.replace(tmp, path)
                return
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
    try:
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f)
        expected = recorded["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PretrainedModelError(
            f"{path}: expected a download record (a JSON object with "
            f"sha256), found {e!r:.80}; remove it to record {url} anew"
        ) from None
    if expected != sha256:
        raise PretrainedModelError(
            f"{url}: expected the bytes of its first download (sha256 "
            f"{expected}, {recorded.get('bytes')} bytes, "
            f"{recorded.get('first_downloaded')}), found sha256 {sha256} "
            f"({size} bytes); nothing was cached. The publisher may have "
            f"replaced the file, or it was changed on the way: if the "
            f"change is expected, remove {path} and fetch again")
