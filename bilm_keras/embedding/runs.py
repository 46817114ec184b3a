"""Durable embedding runs: a long ``embed`` survives a crash and splits
across processes or machines.

``--resume`` continues a crashed run. ``--shard K/N`` splits it, and
``merge-embeddings`` of :mod:`bilm_keras.embedding.merge` joins the shards.

A run writes its progress into a folder beside its output, ``OUT.partial/``:

* ``manifest.json``: what identifies the run. That is
  :func:`run_identity`, the lines of the shard and :func:`file_locations`,
  the files' paths and mtimes. The identity holds the contents of the
  model, vocabulary and input files, every output choice and the batching.
* ``part-AAAAAAAAAAAA-BBBBBBBBBBBB.hdf5``: the embeddings of lines
  ``[A, B)`` in input order. Its datasets are named by their global line
  number, as in the final file, plus ``texts``, the lines' stripped text.
  A part is written to a temporary name and renamed, so it is whole iff it
  exists under its final name. There is one part per chunk of
  ``chunk_size`` lines, counted from the shard's first line. So a resumed
  run chunks, sorts and batches its sentences exactly as an uninterrupted
  one, and its vectors are bit-identical. A shard starts at a chunk
  boundary of the single run, as
  :func:`~bilm_keras.embedding.shards.shard_lines` cuts it. So its chunks
  are the single run's too, and the merged shards its file.

When every part is there, they are copied dataset by dataset into a
temporary file inside the folder. The copy is HDF5's own object copy, so
memory stays flat in the number of sentences. The file is renamed onto
``OUT`` and the folder is removed. The disk holds the parts and the output
at once for a moment: twice the output's size at the peak.

A disk that fills up stops the run with a
:class:`~bilm_keras._utils.disk_full.DiskFullError`, one line naming the
file, the space free, and ``--resume``. The part or merged file being
written is removed and the whole parts stay. The same command with
``--resume`` continues once there is space, to the file an uninterrupted
run writes.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple, Optional

import h5py
import numpy as np

from bilm_keras._utils.atomic_files import hdf5_for_writing, write_text_atomic
from bilm_keras._utils.disk_full import disk_full_error, full_errno

logger = logging.getLogger(__name__)

#: bump when the partial folder's layout changes (an old folder is then a
#: mismatch, never misread)
FORMAT = 1
#: attributes of a shard file that its merge drops or rewrites
SHARD_ATTRS = ("shard", "n_shards", "shard_lines", "n_lines_total")
_PART = re.compile(r"part-(\d{12})-(\d{12})\.hdf5")


class EmbeddingRunError(ValueError):
    """A run that cannot go on as asked (the message is one line naming the
    folder or file, what was expected and what was found)."""


class RunEvent(NamedTuple):
    """A point a durable run has reached, told to its progress callback.

    The callback is ``DumpSettings.on_event``, handed to
    :func:`run_durably`. The points come in this order:

    * ``("part", i)``: line ``i``, its global number, is written into its
      part. The part is whole on disk only after its last line.
    * ``("merge", k)``: the ``k``-th dataset, from 0, is copied into the
      merged file.
    * ``("rename", 0)``: the merged file is complete, not yet renamed onto
      the output.
    * ``("cleanup", 0)``: the output is in place, the progress folder not
      yet removed.

    A callback may log, count, or raise to stop the run. What is on disk
    is then what a kill at that point leaves, and ``resume`` continues it.
    """

    point: str
    index: int


# ---------------------------------------------------------------- identity
def file_fingerprint(name: str, path: Optional[str]) -> dict:
    """What a file holds, wherever it lies: ``{name_size: bytes,
    name_sha256_ends: a hash of its first and last MiB}``.

    It reads 2 MiB, whatever the file's size. A path of None gives
    ``{name_size: None}``."""
    if not path:
        return {f"{name}_size": None}
    size = os.path.getsize(path)
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        digest.update(f.read(2**20))
        if size > 2**20:
            f.seek(max(2**20, size - 2**20))
            digest.update(f.read())
    return {f"{name}_size": size,
            f"{name}_sha256_ends": digest.hexdigest()[:16]}


def file_locations(**paths: Optional[str]) -> dict:
    """Where a run's files lie on this machine: ``{name: absolute path,
    name_mtime_ns: ...}``, with ``""`` for no file. A resumed run must find
    them unchanged. Shards on other machines need not."""
    locations = {}
    for name, path in paths.items():
        if not path:
            locations[name] = ""
            continue
        locations[name] = os.path.abspath(os.fspath(path))
        locations[f"{name}_mtime_ns"] = os.stat(path).st_mtime_ns
    return locations


# Keyword-only, one per field of the identity it returns: the fields are
# the parameters, so a new field is one keyword and one key.
def run_identity(*, options_file: str, weight_file: str,
                 vocab_file: Optional[str], dataset_file: str, output: str,
                 layers: Sequence[int], dtype: str,
                 batch_size: Optional[int],
                 chunk_size: int, n_lines: int,
                 embedding_weight_file: Optional[str] = None,
                 fingerprint: Callable[[str, Optional[str]], dict] = (
                     file_fingerprint),
                 **settings) -> dict:
    """What two processes must share for their outputs to be parts of one
    run.

    That is the files' contents, the output flags, the batching and the
    input's number of lines. Contents, not paths, because shards of one run
    may read copies at other paths on other machines. The batching counts
    because another batching may change the float32 round-off.

    Args:
        settings: any more output flags, as JSON values, e.g. the mix.
        fingerprint: how a file's contents are fingerprinted. It is
            :func:`file_fingerprint`, or the same over another file system
            (:mod:`bilm_keras.embedding.beam_files`).

    Returns:
        A flat dict of JSON values, so a difference is named by one key.
    """
    identity = {"format": FORMAT}
    for name, path in (("options_file", options_file),
                       ("weight_file", weight_file),
                       ("vocab_file", vocab_file),
                       ("dataset_file", dataset_file),
                       ("embedding_weight_file", embedding_weight_file)):
        identity.update(fingerprint(name, path))
    identity.update(output=output, layers=[int(i) for i in layers],
                    dtype=dtype,
                    batch_size=None if batch_size is None else int(batch_size),
                    chunk_size=int(chunk_size), n_lines=int(n_lines),
                    **settings)
    return identity


def run_id(identity: dict) -> str:
    """A short hash of :func:`run_identity` (recorded in every file)."""
    text = json.dumps(identity, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def first_difference(recorded: dict, current: dict) -> Optional[str]:
    """The first key on which two identities differ, as ``"key: A, not
    B"``, or None if they are equal."""
    for key in sorted(set(recorded) | set(current)):
        if recorded.get(key) != current.get(key):
            return (f"{key}: {_show(recorded.get(key))}, not "
                    f"{_show(current.get(key))}")
    return None


def _show(value) -> str:
    return "none" if value is None else json.dumps(value)


# -------------------------------------------------------------- the run
def partial_dir(outfile: str) -> str:
    """The progress folder of the run writing ``outfile``."""
    return os.path.abspath(os.fspath(outfile)) + ".partial"


def check_leftover(outfile: str, resume: bool) -> None:
    """Refuses the progress of an interrupted run writing ``outfile``
    unless ``resume`` is set.

    It runs before anything is loaded. The error is one line saying how to
    continue or start over. The progress is never silently removed or added
    to."""
    folder = partial_dir(outfile)
    if resume or not os.path.isfile(os.path.join(folder, "manifest.json")):
        return
    n_parts = sum(bool(_PART.fullmatch(name)) for name in os.listdir(folder))
    raise EmbeddingRunError(
        f"{folder}/: progress of an interrupted run ({n_parts} part"
        f"{'s' * (n_parts != 1)} on disk); add --resume to continue it, or "
        f"remove the folder to start over")


# Keyword-only parts of one run, each documented below (the dump and the
# Beam merge build them from their values).
def run_durably(
    outfile: str,
    *,
    identity: dict,
    locations: dict,
    lines: tuple[int, int],
    attrs: dict,
    embed_lines: Callable[[int, int], Iterator[tuple[str, np.ndarray]]],
    resume: bool = False,
    shard: Optional[tuple[int, int]] = None,
    on_event: Optional[Callable[[RunEvent], None]] = None,
) -> int:
    """Embeds ``lines`` into ``outfile`` through its ``.partial/`` folder.

    Args:
        outfile: the output HDF5 file.
        identity: :func:`run_identity` of this run.
        locations: :func:`file_locations` of its files. A resumed run
            must find the same.
        lines: ``(a, b)``: the input lines to embed, by global number.
        attrs: the output file's attributes. ``n_sentences``, the run's
            identity and, for a shard, the shard's are added here.
        embed_lines: ``embed_lines(first, end)`` yields ``(text, array)``
            for each line in ``[first, end)``, in order. ``first`` is always
            ``a`` plus a multiple of ``identity["chunk_size"]``.
        resume: continue the parts of a killed run of the same identity.
            With nothing to continue, a line says so and the run starts
            from its first line.
        shard: ``(K, N)`` if this is a shard, recorded in its attributes.
        on_event: called at each :class:`RunEvent`: each line written,
            each dataset merged, before the rename and before the clean-up.

    Returns:
        The number of sentences in ``outfile``.

    Raises:
        EmbeddingRunError: the folder holds another run's progress, or a
            killed run's progress and ``resume`` is False. With
            ``--resume`` the first difference is named.
    """
    folder = partial_dir(outfile)
    manifest = {"run": identity, "run_id": run_id(identity),
                "files": locations, "lines": list(lines),
                "shard": None if shard is None else list(shard)}
    first, end = lines
    size = identity["chunk_size"]
    ranges = [(a, min(a + size, end)) for a in range(first, end, size)]
    done = _prepare(outfile, folder, manifest, ranges, resume)
    if done is None:  # the killed run had finished: nothing to do
        with h5py.File(outfile, "r") as f:
            return int(f.attrs["n_sentences"])
    todo = ranges[done:]
    parts = _PartialFolder(folder, manifest["run_id"], on_event)
    try:
        if todo:
            stream = embed_lines(todo[0][0], end)
            try:
                for a, b in todo:
                    parts.write_part(a, b, stream)
            finally:  # its progress bar ends before any error is shown
                stream.close()
    except BaseException:
        # an error before the first part (a model that does not load, a
        # device that is not there) leaves no progress to keep
        if not any(_PART.fullmatch(name) for name in os.listdir(folder)):
            shutil.rmtree(folder, ignore_errors=True)
        raise
    n = parts.merge(outfile, ranges, manifest, attrs, shard)
    # the manifest goes first: a folder without one is a finished run's
    # leftover, removed by the next run
    os.remove(os.path.join(folder, "manifest.json"))
    shutil.rmtree(folder, ignore_errors=True)
    return n


class PartialState(NamedTuple):
    """What a run's ``.partial/`` folder holds, as :func:`inspect_partial`
    found it (nothing changed). ``kind`` is one of:

    * ``"none"``: no folder.
    * ``"leftover"``: a folder without a manifest, left by a finished run
      killed while it removed its folder.
    * ``"finished"``: this run's folder, and the output is this run's. The
      run was killed after the rename, before the clean-up.
    * ``"other"``: another run's progress. ``difference`` names the first
      difference.
    * ``"interrupted"``: this run's progress, ``whole`` parts done.
    """

    kind: str
    whole: int = 0
    difference: Optional[str] = None


def inspect_partial(outfile: str, folder: str, manifest: dict,
                    ranges: list) -> PartialState:
    """What ``folder`` holds for the run of ``manifest``: a pure
    inspection (:class:`PartialState`)."""
    manifest_file = os.path.join(folder, "manifest.json")
    if not os.path.isdir(folder):
        return PartialState("none")
    if not os.path.isfile(manifest_file):
        return PartialState("leftover")
    with open(manifest_file, encoding="utf-8") as f:
        recorded = json.load(f)
    same = recorded.get("run_id") == manifest["run_id"] and (
        recorded == manifest)
    if not same:
        difference = first_difference(*(
            {**m.get("run", {}), **m.get("files", {}),
             "lines": m.get("lines"), "shard": m.get("shard")}
            for m in (recorded, manifest)))
        return PartialState("other", difference=difference)
    if _is_output_of(outfile, manifest["run_id"]):
        return PartialState("finished")
    return PartialState("interrupted",
                        whole=_whole_parts(folder, ranges,
                                           manifest["run_id"]))


def _prepare(outfile, folder, manifest, ranges, resume):
    """Sets up the folder as its state (:func:`inspect_partial`) asks.

    Returns how many parts are whole, a prefix of ``ranges``, or None when
    ``outfile`` is already this run's output."""
    state = inspect_partial(outfile, folder, manifest, ranges)
    if state.kind == "other":
        raise EmbeddingRunError(
            f"{'--resume: ' * resume}{folder}/ holds the progress of an "
            f"interrupted run with other inputs or flags "
            f"({state.difference or 'manifest differs'}); remove the "
            f"folder to start over")
    if state.kind == "interrupted":
        return _continue_parts(folder, ranges, state.whole, resume)
    if state.kind == "finished":
        os.remove(os.path.join(folder, "manifest.json"))
    shutil.rmtree(folder, ignore_errors=True)  # (none: nothing there)
    if state.kind == "finished" and resume:
        logger.warning("--resume: %s is already complete (removed %s/)",
                       outfile, folder)
        return None
    if resume and state.kind != "finished":
        logger.warning("--resume: no interrupted run to continue (%s/ "
                       "does not exist); starting from the first line",
                       folder)
    _create_folder(folder, manifest)
    return 0


def _continue_parts(folder, ranges, whole, resume) -> int:
    """An interrupted run's folder, continued (``resume``) from its
    ``whole`` first parts: the others, and temporary files, are removed
    (they are redone)."""
    if not resume:
        raise EmbeddingRunError(
            f"{folder}/: progress of an interrupted run ({whole} of "
            f"{len(ranges)} parts done); add --resume to continue it, or "
            f"remove the folder to start over")
    for name in os.listdir(folder):
        match = _PART.fullmatch(name)
        if name == "manifest.json" or (
                match and (int(match[1]), int(match[2])) in ranges[:whole]):
            continue
        os.remove(os.path.join(folder, name))
    logger.warning("--resume: %d of %d parts done (lines %d..%d kept); "
                   "continuing", whole, len(ranges),
                   ranges[0][0] if ranges else 0,
                   ranges[whole - 1][1] if whole else 0)
    return whole


def _create_folder(folder, manifest):
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    os.makedirs(folder)
    try:
        write_text_atomic(os.path.join(folder, "manifest.json"),
                          json.dumps(manifest, indent=1, sort_keys=True)
                          + "\n")
    except BaseException:  # no progress yet: nothing to keep
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _is_output_of(outfile, rid) -> bool:
    try:
        with h5py.File(outfile, "r") as f:
            return f.attrs.get("run_id") == rid
    except (OSError, KeyError):
        return False


def _part_path(folder, a, b) -> str:
    return os.path.join(folder, f"part-{a:012d}-{b:012d}.hdf5")


def _whole_parts(folder, ranges, rid) -> int:
    """How many of ``ranges``, from the first, have a whole part."""
    for k, (a, b) in enumerate(ranges):
        if not _part_is_whole(_part_path(folder, a, b), a, b, rid):
            return k
    return len(ranges)


def _part_is_whole(path, a, b, rid) -> bool:
    if not os.path.isfile(path):
        return False
    try:
        with h5py.File(path, "r") as f:
            return (f.attrs.get("run_id") == rid
                    and int(f.attrs.get("first_line", -1)) == a
                    and int(f.attrs.get("end_line", -1)) == b
                    and f["texts"].shape == (b - a,)
                    and set(f.keys()) == {"texts"} | {
                        str(i) for i in range(a, b)})
    except (OSError, KeyError, ValueError):
        return False


class _PartialFolder:
    """A run's ``.partial/`` folder as the run fills it: its parts, then
    the merged file, each step told to the run's ``on_event``
    (:class:`RunEvent`)."""

    def __init__(self, folder: str, rid: str,
                 on_event: Optional[Callable[[RunEvent], None]]):
        self.folder = folder
        self.rid = rid
        self.on_event = on_event

    def tell(self, point: str, index: int) -> None:
        if self.on_event is not None:
            self.on_event(RunEvent(point, index))

    def write_part(self, a: int, b: int, stream) -> None:
        """Lines ``[a, b)`` of ``stream`` into a part, atomically.

        Raises:
            DiskFullError: the disk filled up. The part's temporary file
                is removed, and the whole parts before it stay for
                ``--resume``.
        """
        path = _part_path(self.folder, a, b)
        tmp = path + ".tmp"
        texts = []
        try:
            with hdf5_for_writing(tmp) as fout:
                for i in range(a, b):
                    text, emb = next(stream)
                    fout.create_dataset(str(i), data=emb)
                    texts.append(text)
                    self.tell("part", i)
                fout.create_dataset("texts", data=texts,
                                    dtype=h5py.string_dtype())
                fout.attrs.update(first_line=a, end_line=b, run_id=self.rid)
            os.replace(tmp, path)
        except Exception as e:
            _raise_if_full(e, self.folder, tmp, path, f"lines {a}..{b}")
            raise

    def merge(self, outfile, ranges, manifest, attrs, shard) -> int:
        """Copies the parts into ``outfile`` through a temporary file in
        the folder, renamed. Returns the number of sentences."""
        tmp = os.path.join(self.folder, "merged.hdf5.tmp")
        try:
            return self._merge_into(tmp, outfile, ranges, manifest, attrs,
                                    shard)
        except Exception as e:
            # the output is about the size of the parts
            size = sum(os.path.getsize(_part_path(self.folder, a, b))
                       for a, b in ranges)
            _raise_if_full(e, self.folder, tmp, outfile, "the merged file",
                           size)
            raise

    def _merge_into(self, tmp, outfile, ranges, manifest, attrs,
                    shard) -> int:
        # --use_sentence_keys: datasets named by their text, no index (the
        # texts were checked to be distinct, non-empty and valid names)
        by_text = attrs.get("keys") == "sentence"
        with hdf5_for_writing(tmp) as fout:
            cap_metadata_cache(fout)
            copied = copy_line_segments(
                fout, [(_part_path(self.folder, a, b), a, b)
                       for a, b in ranges], by_text=by_text)
            with contextlib.closing(copied):  # its part closed on an error
                n, index_json = sentence_index(self._told("merge", copied),
                                               by_text=by_text)
            write_index_and_attrs(fout, index_json, {
                **attrs, "n_sentences": n, "run": json.dumps(
                    manifest["run"], sort_keys=True),
                "run_id": manifest["run_id"],
                **({} if shard is None else shard_attrs(
                    shard, manifest["lines"], manifest["run"]["n_lines"])),
            })
        self.tell("rename", 0)
        os.replace(tmp, outfile)
        self.tell("cleanup", 0)
        return n

    def _told(self, point, items):
        """``items``, telling ``(point, k)`` as the ``k``-th arrives."""
        for k, item in enumerate(items):
            self.tell(point, k)
            yield item


def _raise_if_full(error, folder, tmp, named, what, needed=None) -> None:
    """If ``error`` says the disk is full: removes ``tmp`` (the file being
    written, for ``what``) and raises a ``DiskFullError`` naming ``named``
    that says how to continue. Other errors are left to the caller (what
    a kill leaves, ``--resume`` cleans).

    Args:
        needed: the bytes the file needs, if known (else: more than what
            ``tmp`` had when the disk filled).
    """
    if full_errno(error) is None:
        return
    written = os.path.getsize(tmp) if os.path.exists(tmp) else 0
    if os.path.exists(tmp):
        os.remove(tmp)
    parts = sum(bool(_PART.fullmatch(n)) for n in os.listdir(folder))
    hint = "free some space and run the command again"  # nothing to keep
    if parts:
        hint = (f"{parts} whole part{'s' * (parts != 1)} kept in {folder}/ "
                f"({what} not written); free some space and run the same "
                f"command with --resume")
    raise disk_full_error(error, named, needed=needed or written or None,
                          at_least=needed is None, hint=hint) from error


def copy_line_segments(
    fout: h5py.File,
    segments: Iterable[tuple[str, int, int]],
    *,
    by_text: bool = False,
) -> Iterator[tuple[str, str]]:
    """Copies lines' datasets from parts into ``fout``, in line order: the
    merge of a durable run's parts and of a Beam run's
    (:mod:`bilm_keras.embedding.beam_dump`).

    A part holds a dataset per line, named by its global line number, and
    ``texts``, the lines' stripped text. A Beam part orders ``texts`` as
    its ``lines`` dataset. A durable run's part has no ``lines`` and
    orders them as lines ``first_line .. end_line - 1``, its attributes.

    Args:
        fout: the file being written.
        segments: ``(part path, a, b)``: lines ``[a, b)`` come from that
            part. In line order, every line once.
        by_text: name each dataset by its line's text (``--use_sentence_
            keys``).

    Yields:
        ``(text, name)`` of each line, once its dataset is copied, for
        :func:`sentence_index`.
    """
    path = fin = None
    try:
        for part, a, b in segments:
            if part != path:
                if fin is not None:
                    fin.close()
                path, fin = part, open_hdf5(part, "r")
                texts = fin["texts"].asstr()[...]
                if "lines" in fin:
                    numbers = fin["lines"][...]
                else:
                    numbers = np.arange(int(fin.attrs["first_line"]),
                                        int(fin.attrs["end_line"]))
                row = {int(i): k for k, i in enumerate(numbers)}
            for i in range(a, b):
                text = texts[row[i]]
                name = text if by_text else str(i)
                fin.copy(fin[str(i)], fout, name=name)
                yield text, name
    finally:
        if fin is not None:
            fin.close()


def sentence_index(copied: Iterable[tuple[str, str]], *,
                   by_text: bool = False) -> tuple[int, Optional[str]]:
    """Counts the lines :func:`copy_line_segments` copied.

    Returns:
        ``(n, index_json)``: the datasets copied, and AllenNLP's
        ``sentence_to_index`` as one JSON string for
        :func:`write_index_and_attrs`. It maps a text to the name of its
        last line's dataset, and is None ``by_text``.
    """
    sentence_to_index = {}
    n = 0
    for text, name in copied:
        n += 1
        if not by_text:
            sentence_to_index[text] = name  # a repeat: the last
    return n, None if by_text else json.dumps(sentence_to_index)


def shard_attrs(shard, lines, n_lines) -> dict:
    """The attributes that make a file shard ``K/N`` of a run."""
    return {"shard": f"{shard[0]}/{shard[1]}", "n_shards": int(shard[1]),
            "shard_lines": np.asarray(lines, np.int64),
            "n_lines_total": int(n_lines)}


def write_index_and_attrs(fout, index_json: Optional[str], attrs: dict):
    """AllenNLP's ``sentence_to_index`` (one JSON string: text -> dataset
    name, ``index_json``) and the file's attributes.

    That one string and the dict behind it are the only part of a merge
    that grows with the number of sentences. It takes about 0.2 KB per
    sentence of 25 tokens in the file, several times that in memory while
    it is built."""
    if index_json is not None:  # None: datasets named by their sentence
        index = fout.create_dataset("sentence_to_index", (1,),
                                    dtype=h5py.string_dtype())
        index[0] = index_json
    fout.attrs.update(attrs)


def open_hdf5(path, mode) -> h5py.File:
    """``h5py.File`` with a metadata cache of at most 1 MiB.

    HDF5 caches the headers of the objects a file has touched, up to 32 MiB
    per open file by default. A merge of 100,000 datasets through three
    open files grew its RSS with the number of sentences: 58 MiB at 2,000,
    157 MiB at 60,000. Capped, it stays flat at 67-69 MiB, and the copy is
    no slower, since each dataset is touched once.
    """
    return cap_metadata_cache(h5py.File(path, mode))


def cap_metadata_cache(f: h5py.File) -> h5py.File:
    """Caps the metadata cache of the open file ``f`` at 1 MiB, as
    :func:`open_hdf5` does, and returns ``f``."""
    config = f.id.get_mdc_config()
    config.set_initial_size = True
    config.initial_size = min(config.initial_size, 2**20)
    config.min_size = min(config.min_size, 2**20)
    config.max_size = 2**20
    f.id.set_mdc_config(config)
    return f
