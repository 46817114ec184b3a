"""Shards of one embedding run (``embed --shard K/N``) merged into one
file (``bilm-keras merge-embeddings``), equal to the output of the same
run in one process. Nothing here imports TensorFlow."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

import h5py

from bilm_keras._utils.atomic_files import atomic_hdf5
from bilm_keras.embedding.runs import (
    SHARD_ATTRS,
    EmbeddingRunError,
    cap_metadata_cache,
    first_difference,
    open_hdf5,
    write_index_and_attrs,
)
from bilm_keras.embedding.shards import parse_shard, shard_lines


def merge_embedding_files(outfile: str, shard_files: Iterable[str]) -> int:
    """Merges the shards of one run (``embed --shard K/N``) into one file,
    equal to the output of the same run in one process.

    Datasets are copied one at a time with HDF5's object copy into a
    temporary file beside ``outfile``, renamed onto it when complete.
    Memory stays flat in the number of sentences, but for
    ``sentence_to_index`` (:func:`write_index_and_attrs`).

    Raises:
        EmbeddingRunError: a file that is not a shard, a shard of another
            run (the first difference named), a duplicated or missing
            shard.

    Returns:
        The number of sentences written.
    """
    shards = check_shard_files(shard_files)
    sentence_to_index = {}
    with atomic_hdf5(outfile) as fout:
        cap_metadata_cache(fout)
        for path, attrs in shards:
            a, b = (int(x) for x in attrs["shard_lines"])
            with open_hdf5(path, "r") as fin:
                for i in range(a, b):
                    fin.copy(fin[str(i)], fout, name=str(i))
                sentence_to_index.update(
                    json.loads(fin["sentence_to_index"][0]))
        merged = {k: v for k, v in shards[0][1].items()
                  if k not in SHARD_ATTRS}
        merged["n_sentences"] = int(shards[0][1]["n_lines_total"])
        index_json = json.dumps(sentence_to_index)
        del sentence_to_index
        write_index_and_attrs(fout, index_json, merged)
    return merged["n_sentences"]


def check_shard_files(shard_files: Iterable[str]) -> list[tuple[str, dict]]:
    """Reads the shards' attributes and checks they make one whole run.
    Returns ``(path, attrs)`` in shard order."""
    found: dict[int, tuple[str, dict]] = {}
    first = None
    for path in shard_files:
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise EmbeddingRunError(f"{path}: no such file")
        try:
            with h5py.File(path, "r") as f:
                attrs = dict(f.attrs)
                complete = "sentence_to_index" in f
        except OSError:
            raise EmbeddingRunError(
                f"{path}: not an HDF5 file (expected a shard written by "
                f"`bilm-keras embed --shard K/N`)") from None
        if "shard" not in attrs or "run" not in attrs or not complete:
            raise EmbeddingRunError(
                f"{path}: not a shard (expected the output of `bilm-keras "
                f"embed --shard K/N`, found no shard attribute)")
        k, n = parse_shard(attrs["shard"])
        if first is None:
            first = (path, attrs)
        elif attrs["run_id"] != first[1]["run_id"]:
            difference = first_difference(json.loads(first[1]["run"]),
                                          json.loads(attrs["run"]))
            raise EmbeddingRunError(
                f"{path}: a shard of another run than {first[0]} "
                f"({difference})")
        elif n != first[1]["n_shards"]:
            raise EmbeddingRunError(
                f"{path}: shard {k}/{n}, expected one of {first[0]}'s "
                f"{first[1]['n_shards']} shards")
        if k in found:
            raise EmbeddingRunError(
                f"{path}: shard {k}/{n} again (also {found[k][0]})")
        chunk_size = json.loads(attrs["run"]).get("chunk_size")
        if chunk_size is None:
            raise EmbeddingRunError(
                f"{path}: shard {k}/{n} records no chunk_size (written by "
                f"an older bilm-keras? embed the shard again)")
        lines = shard_lines(k, n, int(attrs["n_lines_total"]),
                            int(chunk_size))
        if [int(x) for x in attrs["shard_lines"]] != list(lines):
            raise EmbeddingRunError(
                f"{path}: shard {k}/{n} holds lines "
                f"{list(attrs['shard_lines'])}, expected {list(lines)}")
        found[k] = (path, attrs)
    if first is None:
        raise EmbeddingRunError("no shard files given")
    n = int(first[1]["n_shards"])
    missing = [k for k in range(n) if k not in found]
    if missing:
        raise EmbeddingRunError(
            f"shard{'s' * (len(missing) > 1)} "
            f"{', '.join(f'{k}/{n}' for k in missing)} missing (found "
            f"{len(found)} of {n} shards of {first[0]}'s run)")
    return [found[k] for k in range(n)]
