"""What a whole-file dump (:func:`~bilm_keras.dump_bilm_embeddings`,
``bilm-keras embed``) checks before it loads a model: the options, the
:class:`~bilm_keras.embedding.outputs.EmbeddingSpec` against them, the
token-input files, the keys and the shard, the input file. One function
for the library and the command, so that each rule is written once; no
TensorFlow, so the command runs it before importing TensorFlow.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional, Tuple

from bilm_keras._utils.settings import SettingError, check_int
from bilm_keras.data.sentence_file import check_sentence_file
from bilm_keras.embedding.outputs import EmbeddingSpec, ResolvedEmbedding
from bilm_keras.embedding.shards import shard_lines
from bilm_keras.options import BiLMOptions


@dataclasses.dataclass(frozen=True)
class DumpPlan:
    """A dump's inputs, checked (:func:`plan_dump`).

    Attributes:
        options: the model's options.
        embedding: the spec, resolved for the model's layers.
        embedding_weight_file: the token table of a token-input run (the
            one given, or ``weight_file`` for a model without ``char_cnn``);
            None for character input.
        keys: how datasets are named: ``"line_number"`` or ``"sentence"``.
        n_lines: lines of the input file (sentences, blank ones included).
        lines: ``(first, end)``: the lines this run embeds (all, or its
            shard's: whole chunks of the single run,
            :func:`~bilm_keras.embedding.shards.shard_lines`).
    """

    options: BiLMOptions
    embedding: ResolvedEmbedding
    embedding_weight_file: Optional[str]
    keys: str
    n_lines: int
    lines: Tuple[int, int]


def plan_dump(
    *,
    options_file: str | os.PathLike,
    weight_file: str | os.PathLike,
    vocab_file: Optional[str | os.PathLike],
    dataset_file: str | os.PathLike,
    spec: EmbeddingSpec,
    embedding_weight_file: Optional[str | os.PathLike] = None,
    use_sentence_keys: bool = False,
    shard: Optional[Tuple[int, int]] = None,
    chunk_size: int = 4096,
) -> DumpPlan:
    """Checks everything of a dump that needs no model (arguments as
    :func:`~bilm_keras.dump_bilm_embeddings`): a bad input fails in
    seconds, before hours of work. ``chunk_size`` (the run's) sets which
    lines a shard embeds.

    Raises:
        OptionsError: ``options_file`` does not describe a biLM.
        SettingError: the spec does not fit the model (its layers, its
            mix); token input (``embedding_weight_file``, or a model
            without ``char_cnn``) without ``vocab_file``; keys by sentence
            with a shard.
        SentenceFileError: ``dataset_file`` is missing, not UTF-8, or (keys
            by sentence) has lines that cannot name a dataset.
    """
    options = BiLMOptions.from_json(options_file)
    embedding = spec.resolve(options.lstm.n_layers)
    if embedding_weight_file is None and options.char_cnn is None:
        table = os.fspath(weight_file)  # a token-input model's own table
        given = "a model without char_cnn reads its token table from "
        given += "weight_file"
    else:
        table = (None if embedding_weight_file is None
                 else os.fspath(embedding_weight_file))
        given = "embedding_weight_file"
    if table is not None and vocab_file is None:
        raise SettingError("vocab_file", f"token input ({given}) needs the "
                                         f"vocabulary of its token table, "
                                         f"found None")
    if use_sentence_keys and shard is not None:
        raise SettingError("use_sentence_keys",
                           "not with shard (a shard's datasets keep their "
                           "line numbers for the merge)")
    stats = check_sentence_file(dataset_file,
                                sentence_keys=use_sentence_keys)
    if shard is None:
        lines = (0, stats.n_lines)
    else:
        check_int("chunk_size", chunk_size, 1)
        lines = shard_lines(*shard, stats.n_lines, chunk_size)
    return DumpPlan(options=options, embedding=embedding,
                    embedding_weight_file=table,
                    keys="sentence" if use_sentence_keys else "line_number",
                    n_lines=stats.n_lines, lines=lines)
