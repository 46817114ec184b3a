"""The Starlette application (:func:`create_app`): the routes, the
limits' answers, authentication and the drain before shutdown.

Routes:

* ``POST /v1/embeddings``: OpenAI's embeddings API, a sentence vector a
  string (:func:`~bilm_keras.serving.request_parsing.
  parse_openai_request`).
* ``POST /v1/elmo``: ELMo per token, each sentence's array as
  :meth:`~bilm_keras.BidirectionalLanguageModel.embed_sentences` gives it
  (:func:`~bilm_keras.serving.request_parsing.parse_elmo_request`).
* ``GET /health``: 200 once the models are loaded and warmed, 503 while
  the server drains.
* ``GET /info``: the models, the limits and the version.
* ``GET /metrics``: Prometheus' text format
  (:class:`~bilm_keras.serving.metrics.ServerMetrics`).

Errors are JSON, as OpenAI's: ``{"error": {"message", "type", "param",
"code"}}``, ``param`` the field or limit at fault. ``docs/serving.md``
has the table of statuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from collections.abc import Mapping
from typing import Optional

import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bilm_keras._utils.version import __version__
from bilm_keras.serving.array_encoding import encode_array
from bilm_keras.serving.dynamic_batcher import BatchFailed, DynamicBatcher
from bilm_keras.serving.limits import ServeLimits
from bilm_keras.serving.metrics import CONTENT_TYPE, ServerMetrics
from bilm_keras.serving.request_parsing import (
    EmbedRequest,
    RequestError,
    check_body_size,
    parse_elmo_request,
    parse_json_body,
    parse_openai_request,
)
from bilm_keras.serving.served_model import ServedModel

logger = logging.getLogger(__name__)

#: the ``type`` of an error answer, by status
_ERROR_TYPES = {401: "authentication_error", 404: "not_found_error",
                413: "request_too_large", 422: "invalid_request_error",
                429: "rate_limit_error", 500: "server_error",
                503: "unavailable"}

#: what a 429 asks a client to wait, in seconds
RETRY_AFTER_S = 1


def error_response(status: int, message: str, param: Optional[str] = None,
                   headers: Optional[dict] = None) -> JSONResponse:
    """An error answer: ``{"error": {"message", "type", "param",
    "code"}}``."""
    return JSONResponse(
        {"error": {"message": message, "type": _ERROR_TYPES[status],
                   "param": param, "code": status}},
        status_code=status, headers=headers)


class ServingState:
    """What the routes share: the models' batchers, the requests in
    flight, and whether the server drains.

    Args:
        models: the :class:`ServedModel` by name.
        limits: the :class:`ServeLimits`.
        api_key: str or None. The key every route but ``/health`` asks
            for as ``Authorization: Bearer KEY``.
    """

    def __init__(self, models: Mapping[str, ServedModel],
                 limits: ServeLimits, api_key: Optional[str]):
        if not models:
            raise ValueError("models: expected at least one model, found "
                             "none")
        self.models = dict(models)
        self.limits = limits
        self.api_key = api_key
        self.metrics = ServerMetrics()
        self.batchers = {
            name: DynamicBatcher(model,
                                 max_batch_tokens=limits.max_batch_tokens,
                                 max_wait_ms=limits.max_wait_ms,
                                 metrics=self.metrics)
            for name, model in self.models.items()}
        self.in_flight = 0
        #: requests the embedding routes received and answered (any
        #: status): equal once the server has drained
        self.received = 0
        self.answered = 0
        self.draining = False
        self.ready = False

    def begin_drain(self) -> None:
        """New requests get 503 from now on; queued ones run at once."""
        self.draining = True
        for batcher in self.batchers.values():
            batcher.flush()

    async def until_idle(self, poll_s: float = 0.02) -> None:
        """Returns when no request is in flight."""
        while self.in_flight:
            await asyncio.sleep(poll_s)

    def authorized(self, request: Request) -> bool:
        if self.api_key is None:
            return True
        scheme, _, key = request.headers.get("authorization", "").partition(
            " ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            key.strip().encode(), self.api_key.encode())


def _unauthorized() -> JSONResponse:
    return error_response(401, "authorization: expected the header "
                               "'Authorization: Bearer KEY' with the "
                               "server's key", "authorization",
                          {"WWW-Authenticate": "Bearer"})


async def _read_body(request: Request, limits: ServeLimits) -> bytes:
    """The body, refused (413) as soon as it passes the limit."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit():
        check_body_size(int(declared), limits)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        check_body_size(size, limits)
        chunks.append(chunk)
    return b"".join(chunks)


async def _client_gone(request: Request) -> None:
    """Returns when the client disconnects (the body read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def _unless_client_leaves(request: Request, work):
    """``await work``, or None once the client disconnects (``work`` is
    cancelled then)."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_client_gone(request))
    try:
        await asyncio.wait({task, watcher},
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None


def _arrays(request: EmbedRequest, arrays) -> list:
    if not request.token_mean:
        return arrays
    dim = request.model.dim
    return [a.mean(axis=0, dtype=np.float32).astype(a.dtype) if len(a)
            else np.zeros((dim,), a.dtype) for a in arrays]


def _elmo_answer(request: EmbedRequest, arrays, payload: dict) -> dict:
    return {
        "object": "list", "model": request.model.name,
        "output": payload.get("output", "layers"),
        "dtype": request.spec.dtype, "encoding": request.encoding,
        "data": [{"index": i, "shape": list(a.shape),
                  "embedding": encode_array(a, request.encoding)}
                 for i, a in enumerate(arrays)],
        "usage": {"sentences": len(arrays), "tokens": request.n_tokens}}


def _openai_answer(request: EmbedRequest, arrays, payload: dict) -> dict:
    return {
        "object": "list", "model": request.model.name,
        "data": [{"object": "embedding", "index": i,
                  "embedding": encode_array(a, request.encoding)}
                 for i, a in enumerate(arrays)],
        "usage": {"prompt_tokens": request.n_tokens,
                  "total_tokens": request.n_tokens}}


def _embedding_route(parse, answer):
    """A POST route: limits, body, checks, the batcher, the answer."""

    async def route(request: Request) -> Response:
        state: ServingState = request.app.state.serving
        path = request.url.path
        state.received += 1
        if not state.authorized(request):
            response = _unauthorized()
        elif state.draining or not state.ready:
            response = error_response(
                503, "the server is shutting down" if state.draining
                else "the models are loading", None,
                {"Connection": "close", "Retry-After": str(RETRY_AFTER_S)})
        elif state.in_flight >= state.limits.max_concurrent_requests:
            response = error_response(
                429, f"max_concurrent_requests: {state.in_flight} requests "
                     f"are in flight, the limit is "
                     f"{state.limits.max_concurrent_requests}; retry later",
                "max_concurrent_requests",
                {"Retry-After": str(RETRY_AFTER_S)})
        else:
            state.in_flight += 1
            state.metrics.in_flight.set(state.in_flight)
            try:
                response = await _embed(request, state, path)
            finally:
                state.in_flight -= 1
                state.metrics.in_flight.set(state.in_flight)
        if state.draining:  # no request more on this connection
            response.headers["Connection"] = "close"
        state.metrics.requests.labels(path, str(response.status_code)).inc()
        state.answered += 1
        return response

    async def _embed(request, state, path) -> Response:
        start = time.monotonic()
        try:
            payload = parse_json_body(await _read_body(request, state.limits))
            checked = parse(payload, state.models, state.limits)
            arrays = await _unless_client_leaves(
                request, state.batchers[checked.model.name].embed(
                    checked.sentences, checked.spec))
        except RequestError as e:
            return error_response(e.status, e.message, e.field)
        except BatchFailed as e:
            return error_response(500, str(e))
        if arrays is None:  # nobody reads the answer
            state.metrics.dropped.inc()
            return Response(status_code=499)
        response = JSONResponse(answer(checked, _arrays(checked, arrays),
                                       payload))
        state.metrics.request_seconds.labels(path).observe(
            time.monotonic() - start)
        return response

    return route


async def _health(request: Request) -> Response:
    state: ServingState = request.app.state.serving
    if state.draining:
        return JSONResponse({"status": "draining"}, status_code=503)
    if not state.ready:
        return JSONResponse({"status": "loading"}, status_code=503)
    return JSONResponse({"status": "ok"})


async def _info(request: Request) -> Response:
    state: ServingState = request.app.state.serving
    if not state.authorized(request):
        return _unauthorized()
    return JSONResponse({
        "models": [m.info() for m in state.models.values()],
        "limits": state.limits.as_dict(), "version": __version__})


async def _metrics(request: Request) -> Response:
    state: ServingState = request.app.state.serving
    if not state.authorized(request):
        return _unauthorized()
    return Response(state.metrics.exposition(), media_type=CONTENT_TYPE)


def create_app(models: Mapping[str, ServedModel],
               limits: Optional[ServeLimits] = None, *,
               api_key: Optional[str] = None) -> Starlette:
    """The server's ASGI application over ``models`` (loaded already).

    Its lifespan starts and stops the models' batchers; ``/health`` says
    ``ok`` once it has started. ``app.state.serving`` is its
    :class:`ServingState`, which :func:`~bilm_keras.serving.server.serve`
    drains on SIGTERM.

    Args:
        models: the :class:`ServedModel` by name.
        limits: the :class:`ServeLimits`, by default its defaults.
        api_key: str or None. With a key, every route but ``/health``
            answers 401 without ``Authorization: Bearer KEY``.

    Example:
        >>> app = create_app({"tiny": served_model("tiny", bilm,
        ...                                        max_batch_tokens=8192)})
        >>> with starlette.testclient.TestClient(app) as client:
        ...     client.post("/v1/elmo", json={"sentences": ["Hi !"]})
    """
    state = ServingState(models, limits or ServeLimits(), api_key)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        for batcher in state.batchers.values():
            batcher.start()
        state.ready = True
        try:
            yield
        finally:
            state.ready = False
            for batcher in state.batchers.values():
                await batcher.stop()

    app = Starlette(routes=[
        Route("/v1/embeddings", _embedding_route(parse_openai_request,
                                                 _openai_answer),
              methods=["POST"]),
        Route("/v1/elmo", _embedding_route(parse_elmo_request, _elmo_answer),
              methods=["POST"]),
        Route("/health", _health, methods=["GET"]),
        Route("/info", _info, methods=["GET"]),
        Route("/metrics", _metrics, methods=["GET"]),
    ], lifespan=lifespan)
    app.state.serving = state
    return app
