"""The batcher on a fake model (no TensorFlow): requests merged up to
max_batch_tokens, the wait for company bounded, a client that leaves
dropped, a failed batch failing only its own requests."""

import asyncio
import logging

import pytest
from conftest import run

from bilm_keras.embedding.outputs import EmbeddingSpec
from bilm_keras.serving.dynamic_batcher import BatchFailed, DynamicBatcher
from bilm_keras.serving.metrics import ServerMetrics

SPEC = EmbeddingSpec(output="sentence_mean")


def _batcher(model, max_batch_tokens=100, max_wait_ms=50):
    return DynamicBatcher(model, max_batch_tokens=max_batch_tokens,
                          max_wait_ms=max_wait_ms, metrics=ServerMetrics())


def test_concurrent_requests_share_a_batch_in_order(fake_model):
    async def main():
        batcher = _batcher(fake_model.served())
        batcher.start()
        requests = [(("a",) * n,) for n in (1, 2, 3)]
        results = await asyncio.gather(*(batcher.embed(r, SPEC)
                                         for r in requests))
        await batcher.stop()
        return results

    results = run(main())
    assert fake_model.calls == [[["a"], ["a", "a"], ["a", "a", "a"]]]
    assert [r[0][0] for r in results] == [1.0, 2.0, 3.0]


def test_a_batch_holds_max_batch_tokens_positions(fake_model):
    async def main():
        # each request 2 sentences of 3 tokens: 10 positions
        batcher = _batcher(fake_model.served(), max_batch_tokens=25)
        batcher.start()
        await asyncio.gather(*(batcher.embed((("x",) * 3,) * 2, SPEC)
                               for _ in range(5)))
        await batcher.stop()

    run(main())
    assert [len(call) for call in fake_model.calls] == [4, 4, 2]


def test_other_outputs_go_in_other_batches(fake_model):
    async def main():
        batcher = _batcher(fake_model.served())
        batcher.start()
        await asyncio.gather(batcher.embed((("a",),), SPEC),
                             batcher.embed((("b",),), EmbeddingSpec()),
                             batcher.embed((("c",),), SPEC))
        await batcher.stop()

    run(main())
    assert fake_model.calls == [[["a"], ["c"]], [["b"]]]


def test_a_lone_request_waits_max_wait_ms_at_most(fake_model):
    async def main():
        batcher = _batcher(fake_model.served(), max_wait_ms=200)
        batcher.start()
        loop = asyncio.get_running_loop()
        start = loop.time()
        await batcher.embed((("a",),), SPEC)
        waited = loop.time() - start
        await batcher.stop()
        return waited

    # the wait is bounded by the limit, not by more company
    assert 0.15 <= run(main()) < 5


def test_a_client_that_leaves_is_not_computed(fake_model):
    async def main():
        batcher = _batcher(fake_model.served(), max_wait_ms=0)
        batcher.start()
        fake_model.gate.clear()  # the model busy with the first request
        first = asyncio.ensure_future(batcher.embed((("busy",),), SPEC))
        while not fake_model.entered.is_set():
            await asyncio.sleep(0.01)
        leaving = asyncio.ensure_future(batcher.embed((("gone",),), SPEC))
        await asyncio.sleep(0.05)
        assert batcher.queued_requests == 1
        leaving.cancel()
        await asyncio.sleep(0.05)
        queued = batcher.queued_requests
        fake_model.gate.set()
        await first
        await batcher.embed((("after",),), SPEC)
        gauge = batcher.metrics.queued_sentences.labels("fake")._value.get()
        await batcher.stop()
        return queued, gauge

    queued, gauge = run(main())
    assert queued == 0 and gauge == 0
    assert fake_model.calls == [[["busy"]], [["after"]]]


def test_a_failed_batch_fails_its_requests_only(fake_model, caplog):
    async def main():
        batcher = _batcher(fake_model.served())
        batcher.start()
        results = await asyncio.gather(
            batcher.embed((("FAIL",),), SPEC),
            batcher.embed((("ok",),), SPEC),  # in the failing batch
            batcher.embed((("other",),), EmbeddingSpec()),
            return_exceptions=True)
        after = await batcher.embed((("later",),), SPEC)
        await batcher.stop()
        return results, after

    with caplog.at_level(logging.ERROR, "bilm_keras.serving"):
        (failed, same_batch, other), after = run(main())
    assert isinstance(failed, BatchFailed)
    assert isinstance(same_batch, BatchFailed)
    assert other[0][0] == 1.0 and after[0][0] == 1.0
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].getMessage() == (
        "a batch of 2 requests (2 sentences, 2 tokens) on model fake "
        "failed: RuntimeError: the model failed")


def test_stop_fails_what_is_still_queued(fake_model):
    async def main():
        batcher = _batcher(fake_model.served(), max_wait_ms=10_000)
        batcher.start()
        waiting = asyncio.ensure_future(batcher.embed((("a",),), SPEC))
        await asyncio.sleep(0.05)
        await batcher.stop()
        with pytest.raises(BatchFailed, match="the server stopped"):
            await waiting

    run(main())
    assert fake_model.calls == []
