"""A MultiWorkerMirroredStrategy cluster of local processes, for the
tests that train on several workers (``tests/training/test_distributed.py``,
``tests/training/test_preemption.py``).

Each worker is a child process on 127.0.0.1 with its own free port and its
``TF_CONFIG`` naming the cluster and its index; whatever is still running
when the block ends is killed."""

import contextlib
import json
import socket
import subprocess


def free_ports(n: int) -> list:
    """``n`` distinct ports no process listens on now."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@contextlib.contextmanager
def local_cluster(commands: list, env: dict, **popen_kwargs):
    """Starts ``commands[i]`` as worker ``i`` (``env`` with its
    ``TF_CONFIG``; ``popen_kwargs`` as :class:`subprocess.Popen`'s, text
    mode) and yields the processes; kills those still running at the
    end."""
    hosts = [f"127.0.0.1:{port}" for port in free_ports(len(commands))]
    procs = []
    try:
        for index, command in enumerate(commands):
            tf_config = {"cluster": {"worker": hosts},
                         "task": {"type": "worker", "index": index}}
            procs.append(subprocess.Popen(
                command, env=dict(env, TF_CONFIG=json.dumps(tf_config)),
                text=True, **popen_kwargs))
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
