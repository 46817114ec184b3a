"""A request's body checked: 413 naming the limit, 422 naming the field,
404 listing the models; no TensorFlow needed."""

import json

import pytest

from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.serving.limits import ServeLimits
from bilm_keras.serving.request_parsing import (
    RequestError,
    check_body_size,
    parse_elmo_request,
    parse_json_body,
    parse_openai_request,
)

LIMITS = ServeLimits(max_sentences=3, max_tokens_per_sentence=4,
                     max_request_bytes=100)


@pytest.fixture
def models(fake_model):
    return {"en": fake_model.served("en"), "zh": fake_model.served("zh")}


def _error(parse, payload, models):
    with pytest.raises(RequestError) as caught:
        parse(payload, models, LIMITS)
    return caught.value


def test_sentences_as_strings_or_tokens(models):
    request = parse_elmo_request(
        {"model": "en", "sentences": ["The  cat\tsat", ["A", "b"]],
         "output": "average", "dtype": "float16", "encoding": "base64"},
        models, LIMITS)
    assert request.sentences == (("The", "cat", "sat"), ("A", "b"))
    assert request.spec == EmbeddingSpec(output="average", dtype="float16")
    assert request.encoding == "base64" and request.n_tokens == 5


def test_openai_input_and_its_sentence_vector(models):
    request = parse_openai_request(
        {"model": "zh", "input": "a b", "encoding_format": "base64",
         "user": "x"}, models, LIMITS)
    assert request.model.name == "zh" and request.sentences == (("a", "b"),)
    assert request.spec.output == "sentence_mean"
    assert request.encoding == "base64" and not request.token_mean


def test_a_learned_mix_is_the_default_mix(fake_model):
    model = fake_model.served("m", learned_mix=((0.0, 1.0, 2.0), 0.5))
    request = parse_elmo_request({"sentences": ["a"], "output": "mix"},
                                 {"m": model}, LIMITS)
    assert request.spec.mix_logits == (0.0, 1.0, 2.0)
    assert request.spec.gamma == 0.5
    openai = parse_openai_request({"input": "a"}, {"m": model}, LIMITS)
    assert openai.spec.output == "mix" and openai.token_mean


@pytest.mark.parametrize("payload,limit,found", [
    ({"sentences": ["a", "b", "c", "d"]}, "max_sentences", "4 sentences"),
    ({"sentences": ["a", "a b c d e"]}, "max_tokens_per_sentence",
     r"sentences\[1\] has 5 tokens"),
])
def test_over_a_limit_is_413_naming_it(models, payload, limit, found):
    error = _error(parse_elmo_request, dict(payload, model="en"), models)
    assert error.status == 413 and error.field == limit
    assert error.message.startswith(f"{limit}: ")
    assert __import__("re").search(found, error.message)


def test_a_body_over_the_bytes_limit_is_413():
    with pytest.raises(RequestError, match="^max_request_bytes: the body "
                                           "has 101 bytes or more, the "
                                           "limit is 100") as caught:
        check_body_size(101, LIMITS)
    assert caught.value.status == 413
    check_body_size(100, LIMITS)


@pytest.mark.parametrize("payload,field,says", [
    ({"sentences": []}, "sentences", "non-empty list"),
    ({"sentences": [["a", 3]]}, "sentences[0]", "list of non-empty strings"),
    ({"sentences": ["a"], "output": "top"}, "output",
     "expected one of layers, average, mix, sentence"),
    ({"sentences": ["a"], "output": "mix"}, "mix_weights", "found neither"),
    ({"sentences": ["a"], "output": "mix", "mix_weights": [1, 2]},
     "mix_weights", "expected 3 values"),
    ({"sentences": ["a"], "layers": [0, 3]}, "layers", "indices in 0..2"),
    ({"sentences": ["a"], "dtype": "float64"}, "dtype", "'float64'"),
    ({"sentences": ["a"], "encoding": "hex"}, "encoding", "json, base64"),
    ({"sentences": ["a"], "vocab_file": "/etc/passwd"}, "vocab_file",
     "unknown field"),
    ({"sentences": ["a"], "model": 3}, "model", "one of ['en', 'zh']"),
])
def test_a_bad_field_is_422_naming_it(models, payload, field, says):
    payload = {"model": "en", **payload}
    error = _error(parse_elmo_request, payload, models)
    assert error.status == 422 and error.field == field
    assert error.message.startswith(f"{field}: ") and says in error.message


@pytest.mark.parametrize("payload,field", [
    ({"input": [1, 2, 3]}, "input[0]"),
    ({"input": "a", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "a", "dimensions": 3}, "dimensions"),
    ({"input": "a", "temperature": 1}, "temperature"),
])
def test_openai_fields(models, payload, field):
    error = _error(parse_openai_request, {"model": "en", **payload}, models)
    assert error.status == 422 and error.field == field


def test_an_unknown_model_is_404_listing_the_names(models):
    for name in ("elmo-original", "tests/fixtures/bilm-tf/model",
                 "../../etc/passwd"):
        error = _error(parse_elmo_request,
                       {"model": name, "sentences": ["a"]}, models)
        assert error.status == 404
        assert error.message == (f"model: no model named {name!r}; the "
                                 f"models are en, zh")


def test_the_model_may_go_unnamed_when_one_is_served(fake_model):
    only = {"en": fake_model.served("en")}
    assert parse_elmo_request({"sentences": ["a"]}, only,
                              LIMITS).model.name == "en"


@pytest.mark.parametrize("body,says", [
    (b"{bad", "expected a JSON object, found invalid JSON"),
    (b"[1]", "expected a JSON object, found list"),
    (b"\xff", "expected a JSON object, found invalid JSON .'utf-8'"),
])
def test_malformed_json_is_422_naming_the_body(body, says):
    with pytest.raises(RequestError, match=f"^body: {says}") as caught:
        parse_json_body(body)
    assert caught.value.status == 422
    assert parse_json_body(json.dumps({"a": 1}).encode()) == {"a": 1}
