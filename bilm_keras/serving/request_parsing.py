"""A request's JSON checked against the limits and the loaded models: an
:class:`EmbedRequest`, or a :class:`RequestError` carrying the HTTP
status and the field at fault.

Nothing here touches a file or loads a model: a request names a model by
the name it was loaded under (:class:`~bilm_keras.serving.served_model.
ServedModel`), and an unknown name is a 404 that lists the names.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Optional

from bilm_keras._utils.settings import SettingError
from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.serving.limits import ServeLimits
from bilm_keras.serving.served_model import ServedModel

#: ``/v1/elmo``'s ``output`` -> the bulk path's
#: (:data:`~bilm_keras.embedding.outputs.EMBEDDING_OUTPUTS`)
ELMO_OUTPUTS = {"layers": "all", "average": "average", "mix": "mix",
                "sentence": "sentence_mean"}

#: the encodings of an array: nested JSON lists, or little-endian base64
ENCODINGS = ("json", "base64")

#: the fields each route takes
_ELMO_FIELDS = ("model", "sentences", "output", "layers", "mix_weights",
                "mix_logits", "gamma", "dtype", "encoding")
_OPENAI_FIELDS = ("model", "input", "encoding_format", "dimensions", "user")


class RequestError(Exception):
    """A request the server will not run.

    Attributes:
        status: int. The HTTP status: 404, 413 or 422.
        message: str. One line naming the field or limit, what was
            expected and what was found.
        field: str or None. The field or the limit at fault.
    """

    def __init__(self, status: int, message: str,
                 field: Optional[str] = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


def _invalid(field: str, reason: str) -> RequestError:
    return RequestError(422, f"{field}: {reason}", field)


def _too_large(limit: str, reason: str) -> RequestError:
    return RequestError(413, f"{limit}: {reason}", limit)


@dataclasses.dataclass(frozen=True)
class EmbedRequest:
    """A checked request.

    Fields:
        model: the :class:`ServedModel` it names.
        sentences: tuple of token tuples.
        spec: what the bulk path computes per sentence.
        encoding: ``"json"`` or ``"base64"``.
        token_mean: bool. The answer is each array's mean over its tokens
            (``/v1/embeddings`` of a model with a learned mix).
    """

    model: ServedModel
    sentences: tuple
    spec: EmbeddingSpec
    encoding: str = "json"
    token_mean: bool = False

    @property
    def n_tokens(self) -> int:
        return sum(len(s) for s in self.sentences)


def parse_json_body(body: bytes) -> dict:
    """The body as a JSON object, else a 422 naming ``body``."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _invalid("body", f"expected a JSON object, found invalid "
                               f"JSON ({e})") from None
    if not isinstance(payload, dict):
        raise _invalid("body", f"expected a JSON object, found "
                               f"{type(payload).__name__}")
    return payload


def check_body_size(n_bytes: int, limits: ServeLimits) -> None:
    """A 413 naming ``max_request_bytes`` when ``n_bytes`` is over it."""
    if n_bytes > limits.max_request_bytes:
        raise _too_large("max_request_bytes",
                         f"the body has {n_bytes} bytes or more, the limit "
                         f"is {limits.max_request_bytes}")


def _check_fields(payload: dict, allowed) -> None:
    unknown = [k for k in payload if k not in allowed]
    if unknown:
        raise _invalid(unknown[0], f"unknown field; expected some of "
                                   f"{', '.join(allowed)}")


def _model(payload: dict, models: Mapping[str, ServedModel]) -> ServedModel:
    name = payload.get("model")
    if name is None and len(models) == 1:
        return next(iter(models.values()))
    if not isinstance(name, str):
        raise _invalid("model", f"expected a model's name, one of "
                                f"{sorted(models)}, found {name!r}")
    if name not in models:
        raise RequestError(404, f"model: no model named {name!r}; the "
                                f"models are {', '.join(sorted(models))}",
                           "model")
    return models[name]


def _sentences(values, field: str, limits: ServeLimits) -> tuple:
    """Token tuples of a list of strings (split on whitespace) or of
    token lists, within the limits."""
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list) or not values:
        raise _invalid(field, f"expected a string or a non-empty list of "
                              f"them, found {_shown(values)}")
    if len(values) > limits.max_sentences:
        raise _too_large("max_sentences",
                         f"{field} has {len(values)} sentences, the limit "
                         f"is {limits.max_sentences}")
    sentences = []
    for i, value in enumerate(values):
        if isinstance(value, str):
            tokens = tuple(value.split())
        elif (isinstance(value, list)
              and all(isinstance(t, str) and t for t in value)):
            tokens = tuple(value)
        else:
            raise _invalid(f"{field}[{i}]", f"expected a string or a list "
                                            f"of non-empty strings, found "
                                            f"{_shown(value)}")
        if len(tokens) > limits.max_tokens_per_sentence:
            raise _too_large("max_tokens_per_sentence",
                             f"{field}[{i}] has {len(tokens)} tokens, the "
                             f"limit is {limits.max_tokens_per_sentence}")
        sentences.append(tokens)
    return tuple(sentences)


def _shown(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _choice(payload: dict, field: str, choices, default: str) -> str:
    value = payload.get(field, default)
    if value not in choices:
        raise _invalid(field, f"expected one of {', '.join(choices)}, "
                              f"found {_shown(value)}")
    return value


def parse_elmo_request(payload: dict, models: Mapping[str, ServedModel],
                       limits: ServeLimits) -> EmbedRequest:
    """``POST /v1/elmo``'s body: ``model``, ``sentences``, ``output``
    (``layers``, ``average``, ``mix`` or ``sentence``) with ``layers``,
    ``mix_weights``, ``mix_logits`` and ``gamma``, ``dtype`` and
    ``encoding``."""
    _check_fields(payload, _ELMO_FIELDS)
    model = _model(payload, models)
    sentences = _sentences(payload.get("sentences"), "sentences", limits)
    output = ELMO_OUTPUTS[_choice(payload, "output", tuple(ELMO_OUTPUTS),
                                  "layers")]
    fields = {name: payload[name] for name in
              ("layers", "mix_weights", "mix_logits", "gamma")
              if payload.get(name) is not None}
    if (output == "mix" and model.learned_mix is not None
            and not {"mix_weights", "mix_logits", "gamma"} & set(fields)):
        fields["mix_logits"], fields["gamma"] = model.learned_mix
    spec = _spec(output=output, dtype=payload.get("dtype", "float32"),
                 n_lm_layers=model.n_lm_layers, **fields)
    encoding = _choice(payload, "encoding", ENCODINGS, "json")
    return EmbedRequest(model, sentences, spec, encoding)


def parse_openai_request(payload: dict, models: Mapping[str, ServedModel],
                         limits: ServeLimits) -> EmbedRequest:
    """``POST /v1/embeddings``' body, OpenAI's: ``input`` (a string or a
    list of them), ``model``, ``encoding_format`` (``float`` or
    ``base64``), ``dimensions`` (the model's own only) and ``user``
    (ignored). The answer is a sentence vector each: the mix averaged over
    the tokens, TF-Hub ELMo's ``default`` (the layers' mean, or the
    model's learned mix)."""
    _check_fields(payload, _OPENAI_FIELDS)
    model = _model(payload, models)
    sentences = _sentences(payload.get("input"), "input", limits)
    encoding_format = _choice(payload, "encoding_format",
                              ("float", "base64"), "float")
    dimensions = payload.get("dimensions")
    if dimensions is not None and dimensions != model.dim:
        raise _invalid("dimensions", f"expected {model.dim} (the model's "
                                     f"size) or none, found "
                                     f"{_shown(dimensions)}")
    encoding = "json" if encoding_format == "float" else "base64"
    if model.learned_mix is None:
        spec = EmbeddingSpec(output="sentence_mean")
        return EmbedRequest(model, sentences, spec, encoding)
    logits, gamma = model.learned_mix
    spec = EmbeddingSpec(output="mix", mix_logits=logits, gamma=gamma)
    return EmbedRequest(model, sentences, spec, encoding, token_mean=True)


def _spec(*, n_lm_layers: int, **fields) -> EmbeddingSpec:
    """The :class:`EmbeddingSpec` of ``fields``, checked for the model; a
    bad field is a 422 naming it."""
    if "layers" in fields and isinstance(fields["layers"], list):
        fields["layers"] = tuple(fields["layers"])
    try:
        spec = EmbeddingSpec(**fields)
        spec.resolve(n_lm_layers)
    except SettingError as e:
        raise _invalid(e.field, e.reason) from None
    return spec
