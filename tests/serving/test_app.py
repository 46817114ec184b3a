"""The routes in-process (httpx's ASGI transport): answers equal to
``embed_sentences`` to 1e-6 under concurrent requests, and every limit's
and fault's answer."""

import asyncio
import builtins
import dataclasses
import logging
import os

import numpy as np
import pytest
from conftest import run, running

from bilm_keras.serving.app import create_app
from bilm_keras.serving.array_encoding import decode_array
from bilm_keras.serving.limits import ServeLimits

SENTENCES = [["The", "cat", "sat", "on", "the", "mat", "."],
             ["Pretrained", "biLMs", "compute", "representations"],
             ["A"], ["Once", "upon", "a", "time", "there", "was", "a",
                     "tiny", "model", "that", "served", "vectors", "."]]


@pytest.mark.slow
def test_elmo_under_concurrent_requests_equals_embed_sentences(
        served_fixture, fixture_bilm):
    # six requests at once, merged into batches with one another (each
    # asking for another cut of the four sentences)
    requests = [SENTENCES[k:] + SENTENCES[:k] for k in range(4)] + [
        SENTENCES[1:2], [" ".join(SENTENCES[3])]]
    app = create_app({"model": served_fixture},
                     ServeLimits(max_wait_ms=100, max_batch_tokens=64))

    async def main(client):
        return await asyncio.gather(*(client.post("/v1/elmo", json={
            "model": "model", "sentences": r}) for r in requests))

    async def with_client():
        async with running(app) as client:
            return await main(client)

    answers = run(with_client())
    expected = fixture_bilm.embed_sentences(SENTENCES)  # (3, n, 32) each
    by_tokens = {tuple(s): e for s, e in zip(SENTENCES, expected)}
    for request, answer in zip(requests, answers):
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["usage"]["sentences"] == len(request)
        for sentence, item in zip(request, body["data"]):
            tokens = tuple(sentence.split() if isinstance(sentence, str)
                           else sentence)
            want = by_tokens[tokens]
            assert item["shape"] == list(want.shape)
            np.testing.assert_allclose(np.asarray(item["embedding"]), want,
                                       atol=1e-6, rtol=0)
    metrics = app.state.serving.metrics
    batches = metrics.batches.labels("model", "ok")._value.get()
    assert batches < len(requests)  # requests did share batches


@pytest.mark.parametrize("output,keywords", [
    ("average", {"output": "average"}),
    ("mix", {"output": "mix", "mix_weights": [0.2, 0.3, 0.5],
             "gamma": 2.0, "layers": None}),
    ("sentence", {"output": "sentence_mean", "layers": [1, 2]}),
])
def test_outputs_dtypes_and_base64(served_fixture, fixture_bilm, output,
                                   keywords):
    fields = {k: v for k, v in keywords.items() if k != "output"}
    app = create_app({"model": served_fixture}, ServeLimits(max_wait_ms=0))

    async def main():
        async with running(app) as client:
            return await client.post("/v1/elmo", json={
                "sentences": SENTENCES[:2], "output": output,
                "dtype": "float16", "encoding": "base64",
                **{k: v for k, v in fields.items() if v is not None}})

    answer = run(main())
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["dtype"] == "float16" and body["encoding"] == "base64"
    expected = fixture_bilm.embed_sentences(
        SENTENCES[:2], output=keywords["output"],
        **{k: v for k, v in fields.items() if v is not None})
    for item, want in zip(body["data"], expected):
        got = decode_array(item["embedding"], "float16", item["shape"])
        np.testing.assert_array_equal(got, want.astype(np.float16))


def test_openai_embeddings_are_the_sentence_vectors(served_fixture,
                                                    fixture_bilm):
    learned = dataclasses.replace(served_fixture, name="learned",
                                  learned_mix=((0.5, -1.0, 2.0), 0.7))
    app = create_app({"model": served_fixture, "learned": learned})
    inputs = [" ".join(s) for s in SENTENCES] + [""]

    async def main():
        async with running(app) as client:
            return await asyncio.gather(*(client.post(
                "/v1/embeddings", json={"model": name, "input": inputs,
                                        "encoding_format": fmt})
                for name in ("model", "learned")
                for fmt in ("float", "base64")))

    plain, plain64, mixed, mixed64 = [a.json() for a in run(main())]
    sentences = [s.split() for s in inputs]
    want = fixture_bilm.embed_sentences(sentences, output="sentence_mean")
    mix = fixture_bilm.embed_sentences(
        sentences, output="mix", mix_logits=[0.5, -1.0, 2.0], gamma=0.7)
    want_mixed = [m.mean(axis=0) if len(m) else np.zeros(32) for m in mix]
    assert plain["usage"] == {"prompt_tokens": 25, "total_tokens": 25}
    assert plain["object"] == "list" and plain["model"] == "model"
    for answers, expected in ((plain, want), (mixed, want_mixed)):
        for item, w in zip(answers["data"], expected):
            assert item["object"] == "embedding"
            np.testing.assert_allclose(item["embedding"], w, atol=1e-6)
    for answers, expected in ((plain64, want), (mixed64, want_mixed)):
        for item, w in zip(answers["data"], expected):
            np.testing.assert_allclose(
                decode_array(item["embedding"], "float32", (32,)), w,
                atol=1e-6)


def test_health_info_and_metrics(fake_model):
    app = create_app({"fake": fake_model.served()},
                     ServeLimits(max_sentences=9))

    async def main():
        before = await app.router.routes[2].endpoint(_Request(app))
        async with running(app) as client:
            await client.post("/v1/elmo", json={"sentences": ["a b"]})
            answers = [await client.get(p) for p in
                       ("/health", "/info", "/metrics")]
        return before, answers

    before, (health, info, metrics) = run(main())
    assert before.status_code == 503  # not started: not ready
    assert health.json() == {"status": "ok"}
    assert info.json()["models"] == [{"name": "fake", "language": None,
                                      "layers": 3, "dim": 2}]
    assert info.json()["limits"]["max_sentences"] == 9
    assert "version" in info.json()
    text = metrics.text
    assert ('bilm_keras_requests_total{route="/v1/elmo",status="200"} 1.0'
            in text)
    assert 'bilm_keras_tokens_total{model="fake"} 2.0' in text
    assert "bilm_keras_requests_in_flight 0.0" in text


class _Request:
    """What ``/health``'s endpoint reads of a request: its app."""

    def __init__(self, app):
        self.app = app


def _blocked_app(fake_model, **limits):
    fake_model.gate.clear()
    return create_app({"fake": fake_model.served()},
                      ServeLimits(max_wait_ms=0, **limits))


async def _until(predicate, timeout=10.0):
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


def test_over_max_concurrent_requests_is_429_with_retry_after(fake_model):
    app = _blocked_app(fake_model, max_concurrent_requests=2)
    state = app.state.serving

    async def main():
        async with running(app) as client:
            held = [asyncio.ensure_future(client.post(
                "/v1/elmo", json={"sentences": [f"s{k}"]}))
                for k in range(2)]
            await _until(lambda: state.in_flight == 2)
            refused = await client.post("/v1/elmo",
                                        json={"sentences": ["x"]})
            health = await client.get("/health")  # the loop is free
            fake_model.gate.set()
            return refused, health, await asyncio.gather(*held)

    refused, health, held = run(main())
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "1"
    error = refused.json()["error"]
    assert error["param"] == "max_concurrent_requests"
    assert error["message"].startswith("max_concurrent_requests: 2 requests "
                                       "are in flight, the limit is 2")
    assert health.status_code == 200
    assert [a.status_code for a in held] == [200, 200]
    assert state.in_flight == 0


def test_413_and_422_and_404_answers(fake_model):
    app = create_app({"fake": fake_model.served()},
                     ServeLimits(max_request_bytes=200, max_sentences=2))

    async def main():
        async with running(app) as client:
            return [
                await client.post("/v1/elmo", content=b"{" + b" " * 300),
                await client.post("/v1/elmo",
                                  json={"sentences": ["a", "b", "c"]}),
                await client.post("/v1/elmo", content=b"{not json"),
                await client.post("/v1/elmo", json={"sentences": ["a"],
                                                    "output": "all"}),
                await client.post("/v1/embeddings",
                                  json={"model": "x", "input": "a"}),
            ]

    too_big, too_many, bad_json, bad_field, unknown = run(main())
    assert too_big.status_code == 413
    assert too_big.json()["error"]["param"] == "max_request_bytes"
    assert too_many.status_code == 413
    assert too_many.json()["error"]["param"] == "max_sentences"
    assert bad_json.status_code == 422
    assert bad_json.json()["error"]["param"] == "body"
    assert bad_field.status_code == 422
    assert bad_field.json()["error"]["param"] == "output"
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == (
        "model: no model named 'x'; the models are fake")
    assert fake_model.calls == []


def test_a_failed_batch_is_500_for_its_requests_only(fake_model, caplog):
    app = create_app({"fake": fake_model.served()},
                     ServeLimits(max_wait_ms=100))

    async def main():
        async with running(app) as client:
            failed, other = await asyncio.gather(
                client.post("/v1/elmo", json={"sentences": ["FAIL now"]}),
                client.post("/v1/elmo", json={"sentences": ["fine"],
                                              "output": "average"}))
            after = await client.post("/v1/elmo", json={"sentences": ["ok"]})
            return failed, other, after

    with caplog.at_level(logging.INFO, "bilm_keras.serving"):
        failed, other, after = run(main())
    assert failed.status_code == 500
    assert failed.json()["error"]["message"] == ("the batch failed "
                                                 "(RuntimeError)")
    assert other.status_code == 200 and after.status_code == 200
    lines = [r for r in caplog.records if r.name.startswith(
        "bilm_keras.serving")]
    assert len(lines) == 1 and lines[0].levelno == logging.ERROR


def test_a_client_that_disconnects_is_dropped(fake_model):
    app = _blocked_app(fake_model)
    state = app.state.serving
    sent = []

    async def call_and_leave(leave: asyncio.Event):
        body = b'{"sentences": ["gone away"]}'
        messages = [{"type": "http.request", "body": body,
                     "more_body": False}]

        async def receive():
            if messages:
                return messages.pop()
            await leave.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/v1/elmo",
                 "raw_path": b"/v1/elmo", "query_string": b"",
                 "headers": [(b"content-type", b"application/json")],
                 "http_version": "1.1", "scheme": "http",
                 "server": ("test", 80), "client": ("test", 1),
                 "root_path": "", "app": app}
        await app(scope, receive, send)

    async def main():
        async with running(app) as client:
            busy = asyncio.ensure_future(client.post(
                "/v1/elmo", json={"sentences": ["busy"]}))
            await _until(fake_model.entered.is_set)
            leave = asyncio.Event()
            leaving = asyncio.ensure_future(call_and_leave(leave))
            await _until(lambda: state.in_flight == 2)
            leave.set()
            await leaving
            in_flight = state.in_flight
            fake_model.gate.set()
            await busy
            return in_flight

    assert run(main()) == 1
    assert fake_model.calls == [[["busy"]]]  # its sentences never ran
    assert state.metrics.dropped._value.get() == 1
    assert state.in_flight == 0 and state.batchers["fake"].queued_requests == 0


def test_a_draining_server_answers_503_and_finishes_in_flight(fake_model):
    app = _blocked_app(fake_model)
    state = app.state.serving

    async def main():
        async with running(app) as client:
            held = asyncio.ensure_future(client.post(
                "/v1/elmo", json={"sentences": ["in flight"]}))
            await _until(lambda: state.in_flight == 1)
            state.begin_drain()
            new = await client.post("/v1/elmo", json={"sentences": ["new"]})
            health = await client.get("/health")
            fake_model.gate.set()
            await state.until_idle()
            return await held, new, health

    held, new, health = run(main())
    assert held.status_code == 200
    assert held.headers["Connection"] == "close"
    assert new.status_code == 503
    assert new.json()["error"]["message"] == "the server is shutting down"
    assert health.status_code == 503
    assert health.json() == {"status": "draining"}
    assert (state.received, state.answered) == (2, 2)


def test_an_api_key_is_asked_for_as_bearer(fake_model):
    app = create_app({"fake": fake_model.served()}, api_key="s3cret")

    async def main():
        async with running(app) as client:
            body = {"sentences": ["a"]}
            return [
                await client.post("/v1/elmo", json=body),
                await client.post("/v1/elmo", json=body, headers={
                    "Authorization": "Bearer wrong"}),
                await client.post("/v1/elmo", json=body, headers={
                    "Authorization": "Basic s3cret"}),
                await client.get("/info"),
                await client.get("/metrics"),
                await client.get("/health"),
                await client.post("/v1/elmo", json=body, headers={
                    "Authorization": "Bearer s3cret"}),
            ]

    *refused, health, allowed = run(main())
    for answer in refused:
        assert answer.status_code == 401
        assert answer.headers["WWW-Authenticate"] == "Bearer"
        assert answer.json()["error"]["param"] == "authorization"
    assert health.status_code == 200 and allowed.status_code == 200
    assert len(fake_model.calls) == 1


def test_no_request_field_reaches_the_file_system(fake_model, model_dir,
                                                  monkeypatch):
    # paths in every field a request has: none is opened, listed or
    # looked at, and no model is loaded
    touched = []

    def record(function):
        def recorded(path, *args, **kwargs):
            touched.append(os.fspath(path) if isinstance(
                path, (str, bytes, os.PathLike)) else path)
            return function(path, *args, **kwargs)
        return recorded

    from bilm_keras import BidirectionalLanguageModel
    from bilm_keras.pretrained import resolution

    def no_loading(*args, **kwargs):
        raise AssertionError("a request loaded a model")

    app = create_app({"fake": fake_model.served()})
    paths = [str(model_dir), "/etc/passwd", "../../etc/shadow",
             "https://example.org/elmo.tar.gz"]

    async def main():
        async with running(app) as client:
            answers = []
            for path in paths:
                for route, body in (
                        ("/v1/elmo", {"model": path, "sentences": [path]}),
                        ("/v1/elmo", {"sentences": [path],
                                      "vocab_file": path}),
                        ("/v1/elmo", {"sentences": [path], "output": path}),
                        ("/v1/embeddings", {"model": path, "input": path}),
                        ("/v1/embeddings", {"input": [path],
                                            "user": path})):
                    answers.append((await client.post(route, json=body))
                                   .status_code)
            return answers

    for name in ("open", "stat", "lstat", "listdir", "scandir", "access"):
        monkeypatch.setattr(os, name, record(getattr(os, name)))
    monkeypatch.setattr(builtins, "open", record(builtins.open))
    monkeypatch.setattr(BidirectionalLanguageModel, "from_pretrained",
                        no_loading)
    monkeypatch.setattr(resolution, "resolve_model", no_loading)
    statuses = run(main())
    monkeypatch.undo()
    assert sorted(set(statuses)) == [200, 404, 422]
    leaked = [p for p in touched if any(
        isinstance(p, str) and (path in p or p in path) for path in paths)]
    assert leaked == []
