"""Concurrent requests' sentences merged into batches for one model
(:class:`DynamicBatcher`).

A request's sentences join a queue. When the model is idle, the first
request waits up to ``max_wait_ms`` for company, or until the queue holds
``max_batch_tokens`` positions. Then the queued requests that ask for the
same output, in arrival order and up to ``max_batch_tokens`` positions
(each sentence's tokens plus 2, with one request at least), go to the
model in one call of the bulk path, in a worker thread. The bulk path
sorts them by length and cuts them into compute batches of at most
``max_batch_tokens`` positions (:func:`~bilm_keras.embedding.
compute_batches.plan_compute_batches`). While a batch computes, the next
requests queue, so batches grow with the load. The event loop never
waits on the model, so ``/health`` and ``/metrics`` answer meanwhile.

A sentence's vectors do not depend on the rest of its batch: the bulk
path computes each sentence from zero states, exactly as alone, to
float32 round-off. A request whose client leaves is taken out of the
queue, and its sentences are not computed. A batch that fails fails its
own requests only, with one line in the log.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import time
from typing import Optional

import numpy as np

from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.serving.metrics import ServerMetrics
from bilm_keras.serving.served_model import ServedModel

logger = logging.getLogger(__name__)


class BatchFailed(RuntimeError):
    """The batch holding a request failed (the log has the reason)."""


@dataclasses.dataclass(eq=False)
class _Job:
    sentences: tuple
    spec: EmbeddingSpec
    positions: int  # tokens + 2 per sentence
    future: asyncio.Future
    arrived: float


class DynamicBatcher:
    """One model's queue and worker thread.

    Args:
        model: the :class:`ServedModel` it runs.
        max_batch_tokens: int. Positions per call of the model at most
            (one request at least).
        max_wait_ms: int. How long the first queued request waits for
            company when the model is idle.
        metrics: the :class:`ServerMetrics` it reports to.

    Start it in the event loop with :meth:`start`, stop it with
    :meth:`stop`.
    """

    def __init__(self, model: ServedModel, *, max_batch_tokens: int,
                 max_wait_ms: int, metrics: ServerMetrics):
        self.model = model
        self.max_batch_tokens = max_batch_tokens
        self.max_wait = max_wait_ms / 1000.0
        self.metrics = metrics
        self._pending: list[_Job] = []
        self._arrived: Optional[asyncio.Event] = None
        self._task: Optional[asyncio.Task] = None
        self._flushing = False
        self._executor = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix=f"bilm-serve-{model.name}")

    def start(self) -> None:
        """Starts the queue's task in the running event loop."""
        self._arrived = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._collect())

    async def stop(self) -> None:
        """Stops the task; requests still queued fail with BatchFailed."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for job in self._pending:
            if not job.future.done():
                job.future.set_exception(BatchFailed("the server stopped"))
        self._pending.clear()
        self._executor.shutdown(wait=True)

    def flush(self) -> None:
        """From now on no request waits for company (the server drains)."""
        self._flushing = True
        if self._arrived is not None:
            self._arrived.set()

    @property
    def queued_requests(self) -> int:
        return len(self._pending)

    async def embed(self, sentences: tuple, spec: EmbeddingSpec
                    ) -> list[np.ndarray]:
        """One array per sentence, as ``model.embed`` gives them, computed
        with whatever else is queued.

        Cancelling the awaiting task (a client that left) takes the
        request out of the queue, or drops its results if its batch is
        computing.

        Raises:
            BatchFailed: its batch failed.
        """
        job = _Job(tuple(sentences), spec,
                   sum(len(s) + 2 for s in sentences),
                   asyncio.get_running_loop().create_future(),
                   time.monotonic())
        self._pending.append(job)
        self._gauge()
        self._arrived.set()
        try:
            return await job.future
        except asyncio.CancelledError:
            if job in self._pending:
                self._pending.remove(job)
                self._gauge()
            raise

    def _gauge(self) -> None:
        self.metrics.queued_sentences.labels(self.model.name).set(
            sum(len(job.sentences) for job in self._pending))

    async def _collect(self) -> None:
        while True:
            await self._arrived.wait()
            self._arrived.clear()
            if not self._pending:
                continue
            await self._wait_for_company(self._pending[0])
            batch = self._take()
            if batch:
                await self._run(batch)
            if self._pending:
                self._arrived.set()

    async def _wait_for_company(self, first: _Job) -> None:
        """Until ``first`` has waited ``max_wait``, the queue holds a full
        batch, ``first`` is gone, or the server drains."""
        while not self._flushing and first in self._pending:
            positions = sum(job.positions for job in self._pending
                            if job.spec == first.spec)
            remaining = first.arrived + self.max_wait - time.monotonic()
            if positions >= self.max_batch_tokens or remaining <= 0:
                return
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except asyncio.TimeoutError:
                return
            self._arrived.clear()

    def _take(self) -> list[_Job]:
        """The first queued request and those after it that ask for the
        same output, up to ``max_batch_tokens`` positions, taken out of
        the queue."""
        if not self._pending:
            return []
        spec = self._pending[0].spec
        batch, positions = [], 0
        for job in self._pending:
            if job.spec != spec:
                continue
            if batch and positions + job.positions > self.max_batch_tokens:
                break
            batch.append(job)
            positions += job.positions
        for job in batch:
            self._pending.remove(job)
        self._gauge()
        return batch

    async def _run(self, batch: list[_Job]) -> None:
        """The model on ``batch`` in the worker thread; each request gets
        its own arrays, or BatchFailed."""
        batch = [job for job in batch if not job.future.done()]
        if not batch:
            return
        sentences = [s for job in batch for s in job.sentences]
        name = self.model.name
        n_tokens = sum(len(s) for s in sentences)
        start = time.monotonic()
        try:
            arrays = await asyncio.get_running_loop().run_in_executor(
                self._executor, self.model.embed, sentences, batch[0].spec)
        except Exception as e:  # the batch's requests fail, not the server
            logger.error("a batch of %d requests (%d sentences, %d tokens) "
                         "on model %s failed: %s: %s", len(batch),
                         len(sentences), n_tokens, name, type(e).__name__,
                         e)
            self.metrics.batches.labels(name, "failed").inc()
            for job in batch:
                if not job.future.done():
                    job.future.set_exception(BatchFailed(
                        f"the batch failed ({type(e).__name__})"))
            return
        self.metrics.batches.labels(name, "ok").inc()
        self.metrics.batch_seconds.labels(name).observe(
            time.monotonic() - start)
        self.metrics.batch_tokens.labels(name).observe(n_tokens)
        self.metrics.batch_requests.labels(name).observe(len(batch))
        self.metrics.tokens.labels(name).inc(n_tokens)
        offset = 0
        for job in batch:
            n = len(job.sentences)
            if not job.future.done():  # else its client left
                job.future.set_result(arrays[offset: offset + n])
            offset += n
