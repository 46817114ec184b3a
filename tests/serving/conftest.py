"""Set-up the server's tests share: the fixture model served, and a fake
model that needs no TensorFlow."""

import asyncio
import contextlib
import threading

import numpy as np
import pytest

from bilm_keras.serving.served_model import ServedModel


class FakeModel:
    """A :class:`ServedModel`'s ``embed`` that records each call's
    sentences, gives each sentence ``[[len, first token's length]]``,
    fails a batch holding the token ``FAIL``, and waits while ``gate`` is
    cleared (a model busy computing)."""

    def __init__(self):
        self.calls = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def embed(self, sentences, spec):
        self.calls.append([list(s) for s in sentences])
        self.entered.set()
        self.gate.wait(30)
        if any("FAIL" in s for s in sentences):
            raise RuntimeError("the model failed")
        return [np.asarray([float(len(s)), float(len(s[0]) if s else 0)],
                           np.float32) for s in sentences]

    def served(self, name="fake", **fields) -> ServedModel:
        return ServedModel(name=name, n_lm_layers=2, dim=2,
                           embed=self.embed, **fields)


@pytest.fixture
def fake_model():
    return FakeModel()


@pytest.fixture(scope="session")
def served_fixture(fixture_bilm):
    """bilm-tf's fixture model as the server serves it (compute batches of
    at most 64 positions, so that a few requests make several)."""
    from bilm_keras.serving.served_model import served_model

    return served_model("model", fixture_bilm, max_batch_tokens=64)


@contextlib.asynccontextmanager
async def running(app):
    """``app`` started (its lifespan) and an httpx client on it."""
    import httpx

    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport,
                                     base_url="http://test",
                                     timeout=60) as client:
            yield client


def run(coroutine):
    """Runs a test's coroutine in a fresh event loop."""
    return asyncio.run(coroutine)
