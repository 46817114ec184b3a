"""A command server for the tests' child processes: a Python that has
imported TensorFlow, Keras and bilm_keras once forks a child per command,
so ``python X.py``, ``python -c``, ``python -m`` and ``bilm-keras`` start
without TensorFlow's import (2-4 s each on a 2-core machine).

The server (``python tests/command_server.py SOCKET``) imports
:data:`PRELOADED` and every module of bilm_keras, runs no TensorFlow op
itself (so TensorFlow has started no thread pool and holds no eager
context; :func:`_preload` asserts it, and that no thread runs) and for
each request forks a child that becomes the command: the caller's stdin,
stdout and stderr (passed over the Unix socket), its folder,
environment, argv and the signals it ignores or blocks; ``sys.argv``,
``sys.path[0]`` and a new ``__main__`` as a fresh interpreter sets them;
numpy reseeded (Python's ``random`` reseeds itself after a fork); at the
end, as a fresh interpreter ends, non-daemon threads joined, ``atexit``
handlers run and the streams flushed; the exit status of ``sys.exit``,
of an uncaught exception (its traceback, 1) and of an uncaught
``KeyboardInterrupt`` (death by SIGINT) a fresh interpreter's.

The callers are shims: a Python without ``site`` (``-IS``, started in
~20 ms) that hands the server its descriptors, prints nothing of its own,
forwards the signals it gets (:data:`FORWARDED_SIGNALS`) to the child,
whenever they come (:func:`_signal_pipe`), and ends as the child ended
(its exit status, or death by the same signal).
A shim killed (SIGKILL, a test's timeout) closes its connection: the
server kills the child with SIGKILL and reaps it before it serves another
request, so a command started after the shim's death never meets it.

Two uses:

* the tests' own children, ``helpers.python_argv(env)`` in place of
  ``[sys.executable]``: one server per pytest process and per
  :func:`fixed_at_import` environment (:class:`CommandServers`), started
  on first use, stopped at the session's end (or when the pytest process
  dies: the server reads its stdin to the end);
* the documents' blocks (``tests/test_docs.py``): :func:`write_shims`
  puts ``bilm-keras``, ``python`` and ``run-script`` first on ``PATH``;
  their ``python`` serves only a script of the repository's ``bin/`` or
  ``examples/`` (any other use, ``python -c``, ``python - <<EOF``, is the
  real interpreter, started afresh).

A fresh interpreter instead, automatically (the server answers
``fresh``, the shim ``exec``s ``python ARGV``): when the caller's
environment leaves ``TF_CPP_MIN_LOG_LEVEL`` unset (the program may set
its own before TensorFlow's import reads it: :func:`unservable`), when it
differs from the server's in a variable read at import
(:func:`fixed_at_import`: ``KERAS_BACKEND``, ``TF_*``, ``CUDA_*``,
``PYTHONPATH``, ``PYTHONHASHSEED``, ...), when the interpreter is another,
when the command line has an option the server does not serve (``-u``,
``-I``, ``-W``, ``-`` ...), or when no server answers. Where the fresh
process is the point (what ``--help`` imports, the first import, a
SavedModel loaded without bilm_keras, an installed wheel, start-up
times), the tests call ``sys.executable`` and say so beside the call.

The protocol, one connection per command: the caller sends one JSON
line (``kind``: ``"interpreter"``, ``"bilm-keras"`` or ``"script"``;
``python``, ``argv``, ``cwd``, ``env``) with its descriptors 0, 1, 2; the
server answers ``fresh REASON`` (and closes), or ``pid N`` (the child,
for signals) and, when the child ends, ``status N`` or ``signal N``.
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
import subprocess
import sys
import tempfile

#: the environment variable naming the server's socket, for the
#: documents' shims
SOCKET_ENV = "BILM_DOCS_COMMAND_SERVER"

#: the repository's folders whose scripts the documents' ``python`` serves
SERVED_FOLDERS = ("bin", "examples")

#: the heavy modules the server imports once, with every module of
#: bilm_keras (what the commands import after their arguments are
#: checked) but those of :data:`NOT_PRELOADED`
PRELOADED = ("bilm_keras", "tensorflow", "keras", "numpy", "h5py")

#: what the server does not import: Apache Beam (3 s, and its gRPC
#: starts a thread: it must not be imported before a fork) and the
#: package's ``__main__`` modules (they would run the command)
NOT_PRELOADED = re.compile(r"beam|__main__$")

#: the signals a shim hands on to its command
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                     signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)

#: the environment variables read when the interpreter starts or when
#: TensorFlow, Keras, numpy and their libraries are imported (a forked
#: child keeps the server's reading of them) ...
FIXED_AT_IMPORT = re.compile(
    r"(TF_|KERAS_|CUDA_|XLA_|OMP_|KMP_|MKL_|OPENBLAS_|MALLOC_|LD_|PYTHON)")

#: ... but these, read later (``TF_CONFIG``: when a strategy is built)
#: or applied by the child itself (``PYTHONUNBUFFERED``)
READ_AFTER_IMPORT = ("TF_CONFIG", "PYTHONUNBUFFERED")

_REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

#: fcntl's F_SETSIG (Linux): the signal a descriptor's owner gets when
#: it becomes readable (the ``fcntl`` module does not name it)
_F_SETSIG = getattr(fcntl, "F_SETSIG", 10)


def unservable(env: dict):
    """Why no fork can run a command in ``env`` (None when one can):
    without ``TF_CPP_MIN_LOG_LEVEL`` a program may set its own before it
    imports TensorFlow (``bilm-keras`` does), which only a fresh
    interpreter honours."""
    if "TF_CPP_MIN_LOG_LEVEL" not in env:
        return "TF_CPP_MIN_LOG_LEVEL unset: the program's own is read " \
               "at TensorFlow's import"
    return None


def fixed_at_import(env: dict) -> dict:
    """The variables of ``env`` a forked child cannot change: those of
    :data:`FIXED_AT_IMPORT` but :data:`READ_AFTER_IMPORT`, with
    ``PYTHONPATH`` as the folders it adds to ``sys.path``."""
    fixed = {name: value for name, value in env.items()
             if FIXED_AT_IMPORT.match(name)
             and name not in READ_AFTER_IMPORT}
    if "PYTHONPATH" in fixed:
        folders = [os.path.abspath(f)
                   for f in fixed["PYTHONPATH"].split(os.pathsep) if f]
        fixed["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(folders))
    return fixed


# --------------------------------------------------------------- the shims
_SHIM = """\
#!{python} -IS
import sys
sys.path.insert(0, {tests!r})
import command_server
command_server.shim_main({kind!r}, {python!r}, {socket!r})
"""


def _write_shim(path: pathlib.Path, kind: str, socket_path=None) -> None:
    path.write_text(_SHIM.format(python=sys.executable, kind=kind,
                                 tests=str(_REPO_ROOT / "tests"),
                                 socket=socket_path), encoding="utf-8")
    path.chmod(0o755)


def write_shims(folder: pathlib.Path) -> None:
    """Writes ``bilm-keras`` and ``python`` into ``folder`` (to be put
    first on ``PATH``), for the server named by ``$SOCKET_ENV``; and
    ``run-script SCRIPT ARGS``, any script run by the server (the
    documents' runner, ``tests/doc_blocks.py``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, kind in (("bilm-keras", "bilm-keras"), ("python", "python"),
                       ("run-script", "script")):
        _write_shim(folder / name, kind)


def _served_script(argv: list) -> bool:
    """Whether the documents' ``python ARGV`` runs a script the server
    serves: ``python PATH.py ARGS`` with PATH in the repository's ``bin/``
    or ``examples/`` (through the scratch folder's links)."""
    if not argv or argv[0].startswith("-") or not argv[0].endswith(".py"):
        return False
    real = pathlib.Path(os.path.realpath(argv[0]))
    return real.is_file() and any(
        real.parent == _REPO_ROOT / folder for folder in SERVED_FOLDERS)


def _fresh_argv(kind: str, python: str, argv: list) -> list:
    """The command line of the same command in a fresh interpreter."""
    if kind == "bilm-keras":
        return [python, "-m", "bilm_keras.cli", *argv]
    return [python, *argv]


def shim_main(kind: str, python: str, socket_path=None) -> None:
    """A shim's program: the command run by the server (at
    ``socket_path``, or ``$SOCKET_ENV``'s), or the real interpreter."""
    argv = sys.argv[1:]
    if kind == "python" and not _served_script(argv):
        os.execv(python, [python] + argv)
    # what the caller ignores (``nohup``, a background job's SIGINT) or
    # blocks, a fresh interpreter ignores or blocks: the child is told
    ignored = [signum for signum in FORWARDED_SIGNALS
               if signal.getsignal(signum) == signal.SIG_IGN]
    blocked = sorted(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    signals = _signal_pipe()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(socket_path or os.environ[SOCKET_ENV])
    except OSError:  # no server (any more): a fresh interpreter
        _exec_fresh(kind, python, argv, ignored, _caught(signals))
    request = json.dumps(dict(kind=kind, python=python, argv=argv,
                              cwd=os.getcwd(), env=dict(os.environ),
                              ignored=ignored, blocked=blocked))
    socket.send_fds(connection, [request.encode() + b"\n"], [0, 1, 2])
    # the server's replies and the signals, waited for together
    selector = selectors.DefaultSelector()
    selector.register(connection, selectors.EVENT_READ)
    selector.register(signals, selectors.EVENT_READ)
    child, pending, replies = None, [], b""
    while True:
        ready = [key.fileobj for key, _ in selector.select()]
        if child is None:
            pending += _caught(signals)
        else:
            _forward(child, _caught(signals))
        if connection not in ready:
            continue
        received = connection.recv(1 << 12)
        if not received:
            sys.exit(f"{kind}: the command server closed the connection")
        replies += received
        while b"\n" in replies:
            line, replies = replies.split(b"\n", 1)
            word, _, value = line.decode().partition(" ")
            if word == "fresh":
                connection.close()
                _exec_fresh(kind, python, argv, ignored,
                            pending + _caught(signals))
            elif word == "pid":
                child = int(value)
                _forward(child, pending)
            elif word == "status":
                sys.exit(int(value))
            elif word == "signal":
                _end_by(int(value), kind)


def _signal_pipe() -> int:
    """The read end of a pipe the forwarded signals write their numbers
    to (``signal.set_wakeup_fd``), from the moment they arrive.

    A Python handler that forwarded a signal itself would run only where
    the shim's Python next checks for signals. A signal that came just
    before the shim blocked in reading the server's reply, after that
    check, waited in the shim until the read returned: when the child
    ended, which it then never did. Read together with the replies, the
    pipe wakes the shim whenever the signal comes.
    """
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write)
    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, _written_to_the_pipe)
    return read


def _written_to_the_pipe(signum, frame) -> None:
    """The forwarded signals' Python handler: each is read from the pipe
    of :func:`_signal_pipe`, its C handler's."""


def _caught(signals: int) -> list:
    """The signals written to the pipe since it was last read."""
    try:
        return list(os.read(signals, 1 << 10))
    except BlockingIOError:
        return []


def _forward(child: int, signums: list) -> None:
    for signum in signums:
        try:
            os.kill(child, signum)
        except ProcessLookupError:  # ended: the server's reply says how
            return


def _exec_fresh(kind: str, python: str, argv: list, ignored: list,
                caught: list) -> None:
    """A fresh interpreter in the shim's place, with the caller's
    dispositions, after the signals the shim caught meanwhile."""
    signal.set_wakeup_fd(-1)
    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, signal.SIG_IGN if signum in ignored
                      else signal.SIG_DFL)
    for signum in caught:
        os.kill(os.getpid(), signum)
    os.execv(python, _fresh_argv(kind, python, argv))


def _end_by(signum: int, kind: str) -> None:
    """Ends the shim as its command ended, killed by ``signum``."""
    if kind != "interpreter":  # as a shell reports it
        sys.exit(128 + signum)
    # a killed interpreter's status, as its caller sees it
    signal.set_wakeup_fd(-1)
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # a signal that does not kill


# ----------------------------------------------------- the tests' servers
class CommandServers:
    """The servers of one pytest process, one per :func:`fixed_at_import`
    environment, each started on first use; :meth:`stop` ends them all."""

    def __init__(self):
        self._folder = None
        self._started = 0
        self._servers = {}  # key -> (Popen, socket path, shim path)

    def _start(self, env: dict) -> tuple:
        if self._folder is None:
            # a short path: a Unix socket's is limited to 107 bytes
            self._folder = tempfile.mkdtemp(prefix="bilm-cmd-")
        n = self._started
        self._started += 1
        socket_path = os.path.join(self._folder, f"{n}.sock")
        # stdin a pipe: the server ends when this process does
        server = subprocess.Popen(
            [sys.executable, str(_REPO_ROOT / "tests" / "command_server.py"),
             socket_path], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        ready = server.stdout.readline()
        if ready != "ready\n":
            server.kill()
            raise RuntimeError(
                f"the command server did not start (exit {server.wait()})")
        shim = pathlib.Path(self._folder) / f"python-{n}"
        _write_shim(shim, "interpreter", socket_path)
        return server, socket_path, shim

    def _server(self, env: dict) -> tuple:
        key = json.dumps(fixed_at_import(env), sort_keys=True)
        if key not in self._servers or \
                self._servers[key][0].poll() is not None:
            self._servers[key] = self._start(dict(env))
        return self._servers[key]

    def socket_path(self, env: dict) -> str:
        """The socket of the server for ``env`` (started if need be)."""
        return self._server(env)[1]

    def python(self, env: dict) -> str:
        """The shim to run in place of ``sys.executable`` with ``env``
        (``sys.executable`` itself where :func:`unservable`)."""
        if unservable(env):
            return sys.executable
        return str(self._server(env)[2])

    def stop(self) -> None:
        import shutil

        for server, _, _ in self._servers.values():
            server.terminate()
        for server, _, _ in self._servers.values():
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
        self._servers.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


# -------------------------------------------------------------- the server
def _unserved(argv: list):
    """Why ``python ARGV`` cannot be forked (None when it can): the server
    serves ``-c CODE``, ``-m MODULE`` and a script's path, each with its
    arguments."""
    if not argv:
        return "an interactive interpreter"
    if argv[0] in ("-c", "-m"):
        return None if len(argv) > 1 else f"{argv[0]} without its argument"
    if argv[0].startswith("-"):
        return f"the option {argv[0]}"
    if not os.path.isfile(argv[0]):
        return f"no file {argv[0]}"
    return None


def _fresh_reason(request: dict, fixed: dict):
    """Why ``request`` must run in a fresh interpreter (None when a
    child of this server is what a fresh one would be)."""
    if os.path.realpath(request["python"]) != os.path.realpath(
            sys.executable):
        return f"another interpreter, {request['python']}"
    reason = unservable(request["env"])
    if reason:
        return reason
    wanted = fixed_at_import(request["env"])
    for name in sorted(set(wanted) | set(fixed)):
        if wanted.get(name) != fixed.get(name):
            return f"{name}={wanted.get(name)!r}, not {fixed.get(name)!r}"
    if request["kind"] == "interpreter":
        return _unserved(request["argv"])
    return None


def _run_main(request: dict) -> None:
    """In the forked child: runs the command in a new ``__main__``."""
    import builtins
    import runpy
    import types

    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    kind, argv = request["kind"], request["argv"]
    if kind == "bilm-keras":
        from bilm_keras import cli

        sys.argv = ["bilm-keras"] + argv
        sys.path[0] = os.path.dirname(sys.executable)
        sys.exit(cli.main(argv))
    if kind == "interpreter" and argv[0] == "-c":
        sys.argv = ["-c"] + argv[2:]
        sys.path[0] = ""
        exec(compile(argv[1], "<string>", "exec"), main.__dict__)
    elif kind == "interpreter" and argv[0] == "-m":
        sys.argv = ["-m"] + argv[2:]  # runpy puts the module's path
        sys.path[0] = os.getcwd()
        runpy._run_module_as_main(argv[1])  # what ``python -m`` runs
    else:  # a script
        path = os.path.abspath(argv[0])
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.realpath(argv[0]))
        main.__file__, main.__cached__ = path, None
        with open(path, "rb") as f:
            source = f.read()
        exec(compile(source, path, "exec"), main.__dict__)


def _exit_status(request: dict) -> int:
    """In the forked child: the command, then what a fresh interpreter
    does at its end; the exit status (a negative one: death by that
    signal)."""
    import atexit
    import threading

    interrupted = False
    try:
        # the caller's mask: a signal forwarded meanwhile is handled now,
        # as the command's (a KeyboardInterrupt below)
        signal.pthread_sigmask(signal.SIG_SETMASK, request.get("blocked", ()))
        _run_main(request)
        status = 0
    except SystemExit as e:
        status = _system_exit_status(e.code)
    except KeyboardInterrupt as e:
        _print_uncaught(e)
        status, interrupted = 1, True
    except BaseException as e:  # what Python does with an uncaught one
        _print_uncaught(e)
        status = 1
    # the interpreter's finalization: threads, atexit, streams
    threading._shutdown()
    atexit._run_exitfuncs()
    return -signal.SIGINT if interrupted else status


def _print_uncaught(error: BaseException) -> None:
    """The traceback a fresh interpreter prints: from the command's
    frames on, without this module's."""
    traceback = error.__traceback__
    while traceback is not None and \
            traceback.tb_frame.f_code.co_filename == __file__:
        traceback = traceback.tb_next
    # (Python prints the exception's own traceback: it is replaced)
    sys.excepthook(type(error), error.with_traceback(traceback), traceback)


def _system_exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


#: the server's own streams, kept: a child's new ones replace them, and
#: the old ones must not close descriptors 0, 1, 2 when collected
_SERVER_STREAMS = []


def _fresh_streams(env: dict) -> None:
    """``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` on descriptors 0,
    1 and 2, buffered as a fresh interpreter buffers them (line-buffered
    on a terminal, stderr always; none with ``PYTHONUNBUFFERED``)."""
    import io

    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    _SERVER_STREAMS.extend((sys.stdin, sys.stdout, sys.stderr,
                            sys.__stdin__, sys.__stdout__, sys.__stderr__))
    made = []
    for fd, old in ((0, sys.__stdin__), (1, sys.__stdout__),
                    (2, sys.__stderr__)):
        raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
        if fd == 0:
            binary = io.BufferedReader(raw)
        elif unbuffered:
            binary = raw
        else:
            binary = io.BufferedWriter(raw)
        made.append(io.TextIOWrapper(
            binary, encoding=old.encoding, errors=old.errors,
            line_buffering=fd == 2 or raw.isatty(),
            write_through=unbuffered and fd != 0))
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made


def _child(request: dict, fds: list) -> None:
    """In the forked child: becomes the caller's command, then exits.

    It starts with the forwarded signals blocked (:func:`_accept`). One
    the shim forwards before the child has a fresh interpreter's
    dispositions waits for them, and for the command
    (:func:`_exit_status`).
    """
    status = 70
    try:
        for signum in FORWARDED_SIGNALS + (signal.SIGCHLD,):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in request.get("ignored", ()):
            signal.signal(signum, signal.SIG_IGN)
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
        _fresh_streams(request["env"])
        # a fresh process's numpy draws its own seed (Python's random
        # reseeds itself after a fork)
        sys.modules["numpy"].random.seed()
        status = _exit_status(request)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        if status < 0:  # as the interpreter ends after a KeyboardInterrupt
            signal.signal(-status, signal.SIG_DFL)
            os.kill(os.getpid(), -status)
        os._exit(status)


def _preload() -> None:
    """Imports :data:`PRELOADED` and bilm_keras's modules; checks that
    TensorFlow has no context yet, that no thread runs and that Beam was
    not imported."""
    import importlib
    import pkgutil
    import threading

    for name in PRELOADED:
        importlib.import_module(name)
    package = sys.modules["bilm_keras"]
    for module in pkgutil.walk_packages(package.__path__, "bilm_keras."):
        if not NOT_PRELOADED.search(module.name):
            importlib.import_module(module.name)
    from tensorflow.python.eager import context

    assert context._context is None, "an import made TensorFlow's context"
    assert threading.active_count() == 1, "an import started a thread"
    assert "apache_beam" not in sys.modules, "an import imported Beam"


class _Stopped(Exception):
    """SIGTERM, or the end of stdin: the server's end."""


def serve(socket_path: str) -> None:
    """The server's loop: imports :data:`PRELOADED`, says ``ready`` on
    stdout, then serves until SIGTERM or the end of its stdin (its
    children are killed then)."""
    # the environment it was started in: bilm_keras, imported first, may
    # add its CPU settings (bilm_keras._utils.cpu_settings), as it does
    # in a fresh interpreter started in that environment
    fixed = fixed_at_import(os.environ)
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(16)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listener")
    selector.register(sys.stdin, selectors.EVENT_READ, "stdin")
    running = {}  # pid -> (pidfd, connection)

    def stop(signum, frame):
        raise _Stopped

    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    try:
        while True:
            events = selector.select()
            # a shim's death before a new command: the old child is
            # gone before the next one starts
            events.sort(key=lambda event: event[0].data == "listener")
            for key, _ in events:
                if key.data == "stdin":
                    if not os.read(sys.stdin.fileno(), 1 << 16):
                        raise _Stopped
                elif key.data == "listener":
                    _accept(listener, selector, running, fixed)
                elif key.data[0] in running:
                    pid, what = key.data
                    _ended(pid, what, selector, running)
    except _Stopped:
        pass
    finally:
        for pid in list(running):
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def _ended(pid: int, what: str, selector, running: dict) -> None:
    """The child ``pid`` ended (``what`` is ``"pidfd"``), or its shim
    closed the connection (``"connection"``: the child is killed)."""
    pidfd, connection = running[pid]
    if what == "connection":
        if connection.recv(1 << 16):
            return  # a shim sends nothing more: not its end
        os.kill(pid, signal.SIGKILL)  # (the kernel has sent it already)
    # no SIGKILL to the pid once reaped (it may be another's then)
    fcntl.fcntl(connection, fcntl.F_SETFL,
                fcntl.fcntl(connection, fcntl.F_GETFL) & ~os.O_ASYNC)
    del running[pid]
    selector.unregister(pidfd)
    selector.unregister(connection)
    os.close(pidfd)
    _, wait_status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(wait_status)
    try:
        connection.sendall((f"status {code}\n" if code >= 0
                            else f"signal {-code}\n").encode())
    except OSError:
        pass  # the caller is gone
    connection.close()


def _accept(listener, selector, running, fixed) -> None:
    connection, _ = listener.accept()
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    while not message.endswith(b"\n"):
        more = connection.recv(1 << 20)
        if not more:
            break
        message += more
    try:
        request = json.loads(message)
        reason = _fresh_reason(request, fixed)
    except ValueError:
        reason = "an unreadable request"
    if reason is not None:
        for fd in fds:
            os.close(fd)
        try:
            connection.sendall(f"fresh {reason}\n".encode())
        except OSError:
            pass
        connection.close()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    # blocked across the fork: the child unblocks them once its
    # dispositions are a fresh interpreter's, not the server's (its
    # SIGTERM handler, a background suite's ignored SIGINT)
    server_mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED_SIGNALS)
    pid = os.fork()
    if pid == 0:
        listener.close()
        connection.close()
        for pidfd, other in running.values():
            os.close(pidfd)
            other.close()
        _child(request, fds)
    signal.pthread_sigmask(signal.SIG_SETMASK, server_mask)
    for fd in fds:
        os.close(fd)
    # the shim's death (its end of the connection closed) SIGKILLs the
    # child from within the kernel, as the shim exits: a caller that
    # waited for the killed shim never meets its command running
    fcntl.fcntl(connection, fcntl.F_SETOWN, pid)
    fcntl.fcntl(connection, _F_SETSIG, signal.SIGKILL)
    fcntl.fcntl(connection, fcntl.F_SETFL,
                fcntl.fcntl(connection, fcntl.F_GETFL) | os.O_ASYNC)
    pidfd = os.pidfd_open(pid)
    running[pid] = (pidfd, connection)
    selector.register(pidfd, selectors.EVENT_READ, (pid, "pidfd"))
    selector.register(connection, selectors.EVENT_READ, (pid, "connection"))
    connection.sendall(f"pid {pid}\n".encode())


if __name__ == "__main__":
    try:
        serve(sys.argv[1])
    except BaseException:
        import traceback

        traceback.print_exc()
        os._exit(1)
    os._exit(0)  # TensorFlow's threads must not hold the exit
