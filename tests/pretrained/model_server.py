"""A local HTTP server for the pretrained-model tests, and the fixture
models it serves at the real URLs' paths (imported by the tests in this
folder: ``from model_server import ...``).

The server (127.0.0.1, a free port, ``http.server`` in a thread) serves
bytes by path, counts requests per path, can lie once about a path's
length (a body cut short of its ``Content-Length``) and can send a path
slowly (so that two processes overlap). Nothing here touches the real
network: tests point ``BILM_KERAS_MODEL_MIRROR`` at this server.
"""

from __future__ import annotations

import collections
import http.server
import io
import json
import os
import pathlib
import tarfile
import threading
import time
import urllib.parse
import zipfile

import pytest

ALLEN = "/models/elmo/"
ELMO_SMALL_OPTIONS = (ALLEN + "2x1024_128_2048cnn_1xhighway/"
                      "elmo_2x1024_128_2048cnn_1xhighway_options.json")
ELMO_SMALL_WEIGHTS = (ALLEN + "2x1024_128_2048cnn_1xhighway/"
                      "elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5")
#: manylangs-zh: the model inside one folder, config_path relative
ZH_ZIP = "/repository/11/179.zip"
#: manylangs-ja: the model at the root (as NLPL's zips hold it), with a
#: stale absolute config_path (as released files have)
JA_ZIP = "/repository/11/160.zip"
ZHS_TAR = "/zhs.model.tar.bz2"
#: a bilm-tf model zip as NLPL's own ELMo zips are laid out (root:
#: options.json, model.hdf5, vocab.txt), reached by URL
BILM_TF_ZIP = "/repository/20/999.zip"
#: paddle-baike-zh: the Fluid checkpoint (tests/fixtures/paddle_baike)
#: inside one folder, no vocabulary (as the release is thought to be)
BAIKE_TAR = "/elmo/baike_elmo_checkpoint.tar.gz"

TINY_CONFIG = "cnn_6_8_16_64_tiny.json"


class ModelServer:
    """Serves ``routes`` (path -> bytes) on 127.0.0.1.

    Attributes:
        routes: what is served; any other path is a 404.
        cut_short: paths whose next response sends half its body under the
            full ``Content-Length``, then closes.
        slow: path -> seconds the body takes to send.
        requests: GET requests per path.
    """

    def __init__(self, routes: dict):
        self.routes = dict(routes)
        self.cut_short = set()
        self.slow = {}
        self.requests = collections.Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = urllib.parse.urlsplit(self.path).path
                with server._lock:
                    server.requests[path] += 1
                    lie = path in server.cut_short
                    server.cut_short.discard(path)
                body = server.routes.get(path)
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                if lie:
                    self.send_header("Connection", "close")
                self.end_headers()
                if lie:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                pieces = 10 if path in server.slow else 1
                step = -(-len(body) // pieces)
                for i in range(0, len(body), step):
                    if path in server.slow:
                        time.sleep(server.slow[path] / pieces)
                    self.wfile.write(body[i:i + step])

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.running = True

    def stop(self) -> None:
        if self.running:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join(10)
            self.running = False


def free_port_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# --- building archives -------------------------------------------------------

def zip_bytes(files: dict) -> bytes:
    """A zip of ``{member name: bytes}``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def tar_bytes(files: dict, mode: str = "w:bz2") -> bytes:
    """A tar (bz2 by default) of ``{member name: bytes}``, with a folder
    entry for each member's folder (as ``tar -c`` writes it)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tf:
        folders = sorted({os.path.dirname(n) for n in files} - {""})
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tf.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def folder_files(folder: pathlib.Path, prefix: str = "") -> dict:
    """``{prefix + file name: bytes}`` of a folder's files."""
    return {prefix + p.name: p.read_bytes()
            for p in sorted(folder.iterdir()) if p.is_file()}


def manylangs_files(tiny_model: pathlib.Path, prefix: str = "", *,
                    stale_config_path: bool = False) -> dict:
    files = folder_files(tiny_model, prefix)
    if stale_config_path:
        config = json.loads(files[prefix + "config.json"])
        config["config_path"] = ("/users4/someone/conll2018/models/"
                                 + TINY_CONFIG)
        files[prefix + "config.json"] = json.dumps(config).encode()
    return files


def bilm_tf_files(model: pathlib.Path) -> dict:
    """The bilm-tf fixture model as NLPL's ELMo zips name the files."""
    return {"options.json": (model / "options.json").read_bytes(),
            "model.hdf5": (model / "lm_weights.hdf5").read_bytes(),
            "vocab.txt": (model / "vocab_test.txt").read_bytes()}


@pytest.fixture(scope="session")
def served_files(bilm_fixtures, manylangs_fixtures,
                 paddle_baike_fixtures) -> dict:
    """Every served path's bytes."""
    model = bilm_fixtures / "model"
    tiny = manylangs_fixtures / "tiny.model"
    baike = paddle_baike_fixtures / "checkpoint"
    return {
        BAIKE_TAR: tar_bytes(folder_files(baike, "baike_elmo_checkpoint/"),
                             mode="w:gz"),
        ELMO_SMALL_OPTIONS: (model / "options.json").read_bytes(),
        ELMO_SMALL_WEIGHTS: (model / "lm_weights.hdf5").read_bytes(),
        ZH_ZIP: zip_bytes(manylangs_files(tiny, "tiny.model/")),
        JA_ZIP: zip_bytes(manylangs_files(tiny, stale_config_path=True)),
        ZHS_TAR: tar_bytes(manylangs_files(tiny, "zhs.model/")),
        BILM_TF_ZIP: zip_bytes(bilm_tf_files(model)),
    }


@pytest.fixture
def model_server(served_files):
    server = ModelServer(served_files)
    yield server
    server.stop()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> pathlib.Path:
    """An empty model cache, set as ``BILM_KERAS_CACHE``."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("BILM_KERAS_CACHE", str(cache))
    return cache


@pytest.fixture
def mirrored(model_server, cache_dir, monkeypatch) -> ModelServer:
    """The server, with ``BILM_KERAS_MODEL_MIRROR`` pointing at it and an
    empty cache."""
    monkeypatch.setenv("BILM_KERAS_MODEL_MIRROR", model_server.url)
    return model_server


def cache_contents(cache: pathlib.Path) -> dict:
    """``{"models": [...], "tmp": [...]}``: what the cache holds (lock
    files aside)."""
    return {folder: sorted(os.listdir(cache / folder))
            if (cache / folder).is_dir() else []
            for folder in ("models", "tmp")}
