"""The server's Prometheus metrics (``GET /metrics``), in a registry of
their own, so that two applications in one process do not share them."""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

#: what ``/metrics`` answers with
CONTENT_TYPE = CONTENT_TYPE_LATEST

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_TOKENS = (16, 64, 256, 1024, 2048, 4096, 8192, 16384, 65536)


class ServerMetrics:
    """The metrics, each prefixed ``bilm_keras_``:

    * ``requests_total{route, status}``: requests answered.
    * ``request_seconds{route}``: time from the body read to the answer.
    * ``requests_in_flight``: requests queued or computing.
    * ``queued_sentences{model}``: sentences waiting for a batch.
    * ``batches_total{model, outcome}``: batches run, ``ok`` or ``failed``.
    * ``batch_seconds{model}``: a batch's compute time.
    * ``batch_tokens{model}``, ``batch_requests{model}``: a batch's size.
    * ``tokens_total{model}``: tokens embedded.
    * ``dropped_requests_total``: requests whose client left before the
      answer.
    """

    def __init__(self):
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("bilm_keras_requests", "requests answered",
                                ("route", "status"), registry=r)
        self.request_seconds = Histogram(
            "bilm_keras_request_seconds", "seconds from the body read to the "
            "answer", ("route",), buckets=_SECONDS, registry=r)
        self.in_flight = Gauge("bilm_keras_requests_in_flight",
                               "requests queued or computing", registry=r)
        self.queued_sentences = Gauge(
            "bilm_keras_queued_sentences", "sentences waiting for a batch",
            ("model",), registry=r)
        self.batches = Counter("bilm_keras_batches", "batches run",
                               ("model", "outcome"), registry=r)
        self.batch_seconds = Histogram(
            "bilm_keras_batch_seconds", "a batch's compute time",
            ("model",), buckets=_SECONDS, registry=r)
        self.batch_tokens = Histogram(
            "bilm_keras_batch_tokens", "tokens per batch", ("model",),
            buckets=_TOKENS, registry=r)
        self.batch_requests = Histogram(
            "bilm_keras_batch_requests", "requests per batch", ("model",),
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256), registry=r)
        self.tokens = Counter("bilm_keras_tokens", "tokens embedded",
                              ("model",), registry=r)
        self.dropped = Counter("bilm_keras_dropped_requests",
                               "requests whose client left before the "
                               "answer", registry=r)

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes."""
        return generate_latest(self.registry)
