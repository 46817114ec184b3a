"""``bilm-keras serve`` as a process on 127.0.0.1 (slow tier: a fresh
interpreter imports TensorFlow): a bounded load answered equal to
``embed_sentences``, the API key, and SIGTERM: 503 for new requests, those
in flight answered, exit 0."""

import concurrent.futures
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from bilm_keras.serving.server import bind_socket
from helpers import REPO_ROOT


def test_bind_socket_names_an_address_in_use():
    first = bind_socket("127.0.0.1", 0)
    try:
        port = first.getsockname()[1]
        first.listen()
        assert first.getsockname()[0] == "127.0.0.1"
        with pytest.raises(OSError, match=f"--host 127.0.0.1 --port {port}: "
                                          "cannot listen there"):
            bind_socket("127.0.0.1", port)
    finally:
        first.close()


@pytest.fixture
def server(model_dir, tmp_path):
    """The command on a free port of 127.0.0.1 with an API key."""
    key = tmp_path / "key.txt"
    key.write_text("s3cret\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT)] + os.environ.get("PYTHONPATH", "").split(
            os.pathsep)), TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bilm_keras.cli", "serve", "--model",
         f"tiny={model_dir}", "--port", "0", "--api_key_file", str(key),
         "--max_wait_ms", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stdout:
        if " on http://" in line:
            break
    else:
        proc.kill()
        pytest.fail(proc.stderr.read()[-3000:])
    url = line.split(" on ")[1].split()[0]
    yield proc, url
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_load_then_sigterm(server, fixture_bilm):
    import httpx

    proc, url = server
    # the default bind: this machine only
    assert url.startswith("http://127.0.0.1:")
    auth = {"Authorization": "Bearer s3cret"}
    sentences = [["The", "cat", "sat", "."], ["A", "b"], ["Serving", "ELMo"]]
    want = fixture_bilm.embed_sentences(sentences, output="average")
    with httpx.Client(base_url=url, timeout=120) as client:
        assert client.get("/health").json() == {"status": "ok"}
        assert client.post("/v1/elmo", json={"sentences": ["a"]}
                           ).status_code == 401

        # a bounded load: 8 clients, 3 s or 200 requests
        def one(k):
            answer = client.post("/v1/elmo", headers=auth, json={
                "sentences": sentences[k % 3:], "output": "average"})
            assert answer.status_code == 200, answer.text
            for item, w in zip(answer.json()["data"], want[k % 3:]):
                np.testing.assert_allclose(item["embedding"], w,
                                           atol=1e-6, rtol=0)

        deadline, done = time.monotonic() + 3, 0
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            while time.monotonic() < deadline and done < 200:
                list(pool.map(one, range(done, done + 8)))
                done += 8

        # SIGTERM with a large request in flight: it is answered, a new
        # one gets 503, and the process exits 0
        heavy = [[f"w{i}" for i in range(200)]] * 100
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            in_flight = pool.submit(client.post, "/v1/elmo", headers=auth,
                                    json={"sentences": heavy,
                                          "output": "sentence"})
            metric = "bilm_keras_requests_in_flight 1.0"
            for _ in range(1000):
                if metric in client.get("/metrics", headers=auth).text:
                    break
                time.sleep(0.01)
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.05)
            with httpx.Client(base_url=url, timeout=60) as fresh:
                refused = fresh.post("/v1/elmo", headers=auth,
                                     json={"sentences": ["new"]})
            answered = in_flight.result()
    assert refused.status_code == 503
    assert refused.json()["error"]["message"] == ("the server is shutting "
                                                  "down")
    assert answered.status_code == 200
    assert len(answered.json()["data"]) == 100
    try:
        status = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("no exit after the drain:\n"
                    + proc.communicate()[1][-3000:])
    err = proc.stderr.read()
    assert status == 0, err[-2000:]
    assert err.rstrip().endswith(f"stopped: {done + 3} requests received, "
                                 f"{done + 3} answered"), err[-2000:]
