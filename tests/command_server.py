"""A command server for the documents' blocks (``tests/test_docs.py``):
``bilm-keras ARGS`` and ``python bin/X.py ARGS`` without TensorFlow's
import each time.

About 70 of the documents' shell lines start a Python that imports
TensorFlow, Keras and bilm_keras (2-4 s each on a 2-core machine) before
doing a second's work. The server (``python tests/command_server.py
SOCKET``) imports them once, runs no TensorFlow op itself (so TensorFlow
has started no thread pool and holds no eager context), and for each
request forks a child that becomes the command: the caller's stdin,
stdout and stderr (passed over the Unix socket), its folder, environment
and argv, ``bilm_keras.cli.main`` or the script run as ``__main__``; the
child's exit status goes back to the caller.

The callers are two small programs the documents' scratch folders put
first on ``PATH`` (:func:`write_shims`), ``bilm-keras`` and ``python``:
a Python without ``site`` (started in ~20 ms) that hands the server its
descriptors, prints nothing of its own, forwards the signals it gets
(``kill -TERM $pid`` of a training run in the background) to the child
and exits with the child's status, so a block reads and runs as a user
types it. ``python`` serves only a script of the repository's ``bin/``
or ``examples/``; any other use (``python -c``, ``python - <<EOF``) is
the real interpreter, started afresh.

What a fresh process proves and this does not (the real console script,
``--help`` without TensorFlow, an installed wheel) is proven in
``tests/cli/test_cli.py`` and ``tests/test_wheel_install.py``.

The protocol, one connection per command: the caller sends one JSON
line (``kind``: ``"bilm-keras"`` or ``"script"``; ``argv``, ``cwd``,
``env``) with its descriptors 0, 1, 2; the server answers ``pid N`` (the
child, for signals) and, when the child ends, ``status N`` (a signal's
death as 128 + its number, as a shell reports it).
"""

from __future__ import annotations

import fcntl
import json
import os
import pathlib
import re
import selectors
import signal
import socket
import sys

#: the environment variable naming the server's socket, for the shims
SOCKET_ENV = "BILM_DOCS_COMMAND_SERVER"

#: the repository's folders whose scripts ``python`` serves
SERVED_FOLDERS = ("bin", "examples")

#: the heavy modules the server imports once, with every module of
#: bilm_keras (what the commands import after their arguments are
#: checked) but those of :data:`NOT_PRELOADED`
PRELOADED = ("tensorflow", "keras", "numpy", "h5py", "bilm_keras")

#: what the server does not import: Apache Beam (3 s, and its gRPC
#: starts a thread: it must not be imported before a fork) and the
#: package's ``__main__`` (it would run the command)
NOT_PRELOADED = re.compile(r"beam|__main__$")

#: the signals a shim hands on to its command
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                     signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)

_REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


# --------------------------------------------------------------- the shims
_SHIM = """\
#!{python} -IS
import sys
sys.path.insert(0, {tests!r})
import command_server
command_server.shim_main({kind!r}, {python!r})
"""


def write_shims(folder: pathlib.Path) -> None:
    """Writes ``bilm-keras`` and ``python`` into ``folder`` (to be put
    first on ``PATH``), for the server named by ``$SOCKET_ENV``; and
    ``run-script SCRIPT ARGS``, any script run by the server (the
    documents' runner, ``tests/doc_blocks.py``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, kind in (("bilm-keras", "bilm-keras"), ("python", "python"),
                       ("run-script", "script")):
        path = folder / name
        path.write_text(_SHIM.format(python=sys.executable, kind=kind,
                                     tests=str(_REPO_ROOT / "tests")),
                        encoding="utf-8")
        path.chmod(0o755)


def _served_script(argv: list) -> bool:
    """Whether ``python ARGV`` runs a script the server serves: ``python
    PATH.py ARGS`` with PATH in the repository's ``bin/`` or ``examples/``
    (through the scratch folder's links)."""
    if not argv or argv[0].startswith("-") or not argv[0].endswith(".py"):
        return False
    real = pathlib.Path(os.path.realpath(argv[0]))
    return real.is_file() and any(
        real.parent == _REPO_ROOT / folder for folder in SERVED_FOLDERS)


def shim_main(kind: str, python: str) -> None:
    """A shim's program: the command run by the server, or (``python``
    for anything but a served script) the real interpreter."""
    argv = sys.argv[1:]
    if kind == "python" and not _served_script(argv):
        os.execv(python, [python] + argv)
    child, pending = None, []

    def forward(signum, frame):
        if child is None:
            pending.append(signum)
        else:
            os.kill(child, signum)

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(os.environ[SOCKET_ENV])
    request = json.dumps(dict(kind=kind, argv=argv, cwd=os.getcwd(),
                              env=dict(os.environ)))
    socket.send_fds(connection, [request.encode() + b"\n"], [0, 1, 2])
    replies = connection.makefile("r", encoding="utf-8")
    for line in replies:
        word, number = line.split()
        if word == "pid":
            child = int(number)
            for signum in pending:
                os.kill(child, signum)
        elif word == "status":
            sys.exit(int(number))
    sys.exit(f"{kind}: the command server closed the connection")


# -------------------------------------------------------------- the server
def _run_command(request: dict) -> int:
    """In the forked child: the command itself; its exit status."""
    import runpy
    import traceback

    argv = request["argv"]
    try:
        if request["kind"] == "bilm-keras":
            from bilm_keras import cli

            sys.argv = ["bilm-keras"] + argv
            sys.path[0] = os.path.dirname(sys.executable)
            code = cli.main(argv)
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.realpath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
            code = 0
    except SystemExit as e:
        code = e.code
    except BaseException:  # what Python does with an uncaught exception
        traceback.print_exc()
        code = 1
    if code is None:
        return 0
    if not isinstance(code, int):
        print(code, file=sys.stderr)
        return 1
    return code


def _child(request: dict, fds: list) -> None:
    """In the forked child: becomes the caller's command, then exits."""
    status = 70
    try:
        for signum in FORWARDED_SIGNALS + (signal.SIGCHLD,):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # out of the way first: a descriptor received may be 0, 1 or 2
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds]
        for fd in fds:
            os.close(fd)
        for target, fd in enumerate(moved):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # a fresh process's numpy draws its own seed (Python's random
        # reseeds itself after a fork)
        sys.modules["numpy"].random.seed()
        status = _run_command(request)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)


def _preload() -> None:
    """Imports :data:`PRELOADED` and bilm_keras's modules; checks that
    TensorFlow has no context yet and that Beam was not imported."""
    import importlib
    import pkgutil

    for name in PRELOADED:
        importlib.import_module(name)
    package = sys.modules["bilm_keras"]
    for module in pkgutil.walk_packages(package.__path__, "bilm_keras."):
        if not NOT_PRELOADED.search(module.name):
            importlib.import_module(module.name)
    from tensorflow.python.eager import context

    assert context._context is None, "an import made TensorFlow's context"
    assert "apache_beam" not in sys.modules, "an import imported Beam"


class _Stopped(Exception):
    """SIGTERM: the server's end."""


def serve(socket_path: str) -> None:
    """The server's loop: imports :data:`PRELOADED`, says ``ready`` on
    stdout, then serves until SIGTERM (its children are killed then)."""
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(16)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    running = {}  # pidfd -> (pid, connection)

    def stop(signum, frame):
        raise _Stopped

    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is listener:
                    _accept(listener, selector, running)
                else:  # a child ended
                    pidfd = key.fileobj
                    pid, connection = running.pop(pidfd)
                    selector.unregister(pidfd)
                    os.close(pidfd)
                    _, wait_status = os.waitpid(pid, 0)
                    code = os.waitstatus_to_exitcode(wait_status)
                    status = code if code >= 0 else 128 - code
                    try:
                        connection.sendall(f"status {status}\n".encode())
                    except OSError:
                        pass  # the caller is gone
                    connection.close()
    except _Stopped:
        pass
    finally:
        for pid, _ in running.values():
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def _accept(listener, selector, running) -> None:
    connection, _ = listener.accept()
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    while not message.endswith(b"\n"):
        more = connection.recv(1 << 20)
        if not more:
            break
        message += more
    request = json.loads(message)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        listener.close()
        connection.close()
        for other in running.values():
            other[1].close()
        _child(request, fds)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    running[pidfd] = (pid, connection)
    selector.register(pidfd, selectors.EVENT_READ)
    connection.sendall(f"pid {pid}\n".encode())


if __name__ == "__main__":
    try:
        serve(sys.argv[1])
    except BaseException:
        import traceback

        traceback.print_exc()
        os._exit(1)
    os._exit(0)  # TensorFlow's threads must not hold the exit
