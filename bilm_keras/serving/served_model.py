"""A loaded model as the server uses it (:class:`ServedModel`), and the
models of ``--model [NAME=]SPEC`` flags loaded and warmed
(:func:`load_served_models`).

A request names a model by the name it was loaded under and nothing else:
no field of a request is a path, and none loads a model.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Optional

import numpy as np

from bilm_keras.bidirectional_language_model import BidirectionalLanguageModel
from bilm_keras.embedding.bulk_embedder import BulkEmbedder
from bilm_keras.embedding.memory import return_freed_memory_for_bulk_embedding
from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.pretrained import registered_model
from bilm_keras.serving.model_names import (
    check_model_name,
    parse_model_flag,
)

logger = logging.getLogger(__name__)

#: what warms a model's graphs up: sentences of several lengths
_WARM_UP = (["Warm", "up", "."], ["A"] * 12)

#: ``embed(sentences, spec)``: one array per sentence, in order
EmbedFunction = Callable[[Sequence[Sequence[str]], EmbeddingSpec],
                         "list[np.ndarray]"]


@dataclasses.dataclass(frozen=True)
class ServedModel:
    """A model the server answers for.

    Fields:
        name: str. What a request's ``model`` field names it by.
        n_lm_layers: int. Its LSTM layers ``L``: it outputs ``L + 1``
            layers, 0 the token layer.
        dim: int. Each layer's vector size, ``2 * projection_dim``.
        embed: ``embed(sentences, spec)``, one array per token list as
            :meth:`BulkEmbedder.embed_sentences <bilm_keras.embedding.
            bulk_embedder.BulkEmbedder.embed_sentences>` gives it. It runs
            in the server's worker thread. A test may pass its own.
        language: str or None. The ISO 639 code of a published model.
        learned_mix: ``(mix_logits, gamma)`` or None. The model's own mix
            (a converted TF1 Hub module's), used by ``output="mix"``
            without weights, as :meth:`BidirectionalLanguageModel.
            embed_sentences` does.
    """

    name: str
    n_lm_layers: int
    dim: int
    embed: EmbedFunction
    language: Optional[str] = None
    learned_mix: Optional[tuple] = None

    def info(self) -> dict:
        """What ``GET /info`` says of it."""
        return {"name": self.name, "language": self.language,
                "layers": self.n_lm_layers + 1, "dim": self.dim}


def served_model(name: str, bilm: BidirectionalLanguageModel, *,
                 max_batch_tokens: int,
                 language: Optional[str] = None) -> ServedModel:
    """``bilm`` as the server uses it: the bulk embedding path of
    :meth:`~bilm_keras.BidirectionalLanguageModel.embed_sentences` with
    compute batches of at most ``max_batch_tokens`` positions, on the
    model's own batcher, vocabulary and alignment."""
    backbone = bilm.backbone
    embedder = BulkEmbedder(backbone, options=bilm.options,
                            alignment=bilm.alignment,
                            compute_tokens=max_batch_tokens)
    vocab_file = None if bilm.use_character_inputs else bilm.vocab_file

    def embed(sentences, spec):
        return embedder.embed_sentences(sentences, None, vocab_file,
                                        spec=spec)

    mix = bilm.learned_mix
    return ServedModel(
        name=name, n_lm_layers=backbone.n_layers,
        dim=2 * backbone.projection_dim, embed=embed, language=language,
        learned_mix=None if mix is None else (tuple(mix.mix_logits),
                                              mix.gamma))


def load_served_models(flags: Sequence[str], *, max_batch_tokens: int,
                       precision: str = "float32") -> dict:
    """The models of ``--model [NAME=]SPEC`` flags, loaded with
    :meth:`~bilm_keras.BidirectionalLanguageModel.from_pretrained` and
    warmed up (their graphs traced), by name.

    A model's name is ``NAME`` where given, else its registry name or its
    folder's (archive's) base name.

    Raises:
        ValueError: two models under one name, or a bad name.
        PretrainedModelError: a SPEC that cannot be resolved.
    """
    return_freed_memory_for_bulk_embedding()  # the process's malloc
    models = {}
    for flag in flags:
        name, spec = parse_model_flag(flag)
        bilm = BidirectionalLanguageModel.from_pretrained(
            spec, precision=precision)
        name = check_model_name(name or bilm.pretrained.name)
        if name in models:
            raise ValueError(f"--model: two models named {name!r}; name "
                             f"them with --model NAME=SPEC")
        row = registered_model(spec)
        model = served_model(name, bilm, max_batch_tokens=max_batch_tokens,
                             language=None if row is None
                             else row.language_code)
        model.embed(list(_WARM_UP), EmbeddingSpec())  # traces the graphs
        logger.info("model %s loaded from %s", name, spec)
        models[name] = model
    return models
