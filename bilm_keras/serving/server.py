"""The application under uvicorn (:func:`serve`), bound to 127.0.0.1 by
default, with SIGTERM's drain.

SIGTERM (or Ctrl-C) starts the drain: new requests are answered 503
with ``Connection: close``, the queued ones run at once, and when none is
left in flight (or after ``drain_timeout_s``) uvicorn closes the
connections and :func:`serve` returns, so the process exits 0. A second
signal stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Callable
from typing import Optional

import uvicorn
from starlette.applications import Starlette

logger = logging.getLogger(__name__)

#: the signals that start the drain
DRAIN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _DrainingServer(uvicorn.Server):
    """uvicorn's server whose first signal drains the application's
    requests before it stops, and which exits quietly (uvicorn raises a
    captured signal again after its shutdown)."""

    def __init__(self, config: uvicorn.Config, state, drain_timeout_s: float,
                 on_listening: Optional[Callable[[str], None]]):
        super().__init__(config)
        self._state = state
        self._drain_timeout_s = drain_timeout_s
        self._on_listening = on_listening
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._draining = False

    async def serve(self, sockets=None) -> None:
        self._loop = asyncio.get_running_loop()
        with self.capture_signals():
            await self._serve(sockets)

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started and self._on_listening is not None:
            host, port = sockets[0].getsockname()[:2]
            host = f"[{host}]" if ":" in host else host
            self._on_listening(f"http://{host}:{port}")

    @contextlib.contextmanager
    def capture_signals(self):
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        originals = {sig: signal.signal(sig, self.handle_exit)
                     for sig in DRAIN_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig, frame) -> None:
        if self._draining or self._loop is None:
            self.should_exit = True
            self.force_exit = self._draining
            return
        self._draining = True
        self._loop.call_soon_threadsafe(
            lambda: self._loop.create_task(self.drain()))

    async def drain(self) -> None:
        """503 for new requests, the queued ones at once, then stop."""
        logger.info("draining: %d requests in flight",
                    self._state.in_flight)
        self._state.begin_drain()
        try:
            await asyncio.wait_for(self._state.until_idle(),
                                   self._drain_timeout_s)
        except asyncio.TimeoutError:
            logger.warning("%d requests still in flight after %g s; "
                           "stopping", self._state.in_flight,
                           self._drain_timeout_s)
        self.should_exit = True


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: a free port).

    Raises:
        OSError: the address cannot be bound, with it named.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise OSError(e.errno, f"--host {host} --port {port}: cannot "
                               f"listen there ({e.strerror})") from None
    sock.set_inheritable(True)
    return sock


def serve(app: Starlette, *, host: str = "127.0.0.1", port: int = 8080,
          drain_timeout_s: float = 30.0,
          on_listening: Optional[Callable[[str], None]] = None
          ) -> tuple[int, int]:
    """Serves ``app`` (:func:`~bilm_keras.serving.app.create_app`'s) until
    SIGTERM or SIGINT, then drains it and returns.

    Args:
        host: str. The address to listen on; 127.0.0.1, the default, takes
            connections from this machine only.
        port: int. The port; 0 takes a free one.
        drain_timeout_s: float. How long the drain waits for the requests
            in flight.
        on_listening: called with the server's URL once it listens, e.g.
            ``http://127.0.0.1:8080``.

    Returns:
        ``(received, answered)``: the requests the embedding routes
        received and answered, equal after a drain that finished.
    """
    sock = bind_socket(host, port)
    config = uvicorn.Config(app, lifespan="on", log_config=None,
                            access_log=False,
                            timeout_graceful_shutdown=drain_timeout_s)
    server = _DrainingServer(config, app.state.serving, drain_timeout_s,
                             on_listening)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    state = app.state.serving
    return state.received, state.answered
