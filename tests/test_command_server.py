"""``tests/command_server.py`` through ``helpers.python_argv``: a forked
child ends, prints and fails as a fresh interpreter does (each case run
both ways, the fresh interpreter the reference), signals reach it, a
killed shim takes its child along, and what a fork cannot be runs
afresh."""

import os
import signal
import subprocess
import sys

import pytest
from helpers import python_argv

# the slow tier: only slow tests start children through the server, and
# starting it (TensorFlow's import) is most of these tests' time
pytestmark = pytest.mark.slow

#: each a ``python -c`` program and its arguments: what it prints, its
#: traceback and its exit status must be a fresh interpreter's
PROGRAMS = {
    "argv_and_path": ["import sys; print(sys.argv, repr(sys.path[0]), "
                      "__name__)", "a", "b"],
    "exit_code": ["import sys; print('out', end=''); sys.exit(3)"],
    "exit_message": ["import sys; sys.exit('a message')"],
    "exit_none": ["raise SystemExit"],
    "uncaught": ["def f():\n    raise ValueError('bad')\nf()"],
    "keyboard_interrupt": ["print('before'); raise KeyboardInterrupt"],
    "atexit_and_buffered": [
        "import atexit, sys; atexit.register(print, 'at exit'); "
        "sys.stdout.write('buffered')"],
    "thread_joined": [
        "import threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), "
        "print('thread'))).start()"],
    "stdin": ["import sys; print(sys.stdin.read().upper())"],
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_child_ends_as_a_fresh_interpreter(name, tmp_path):
    args = PROGRAMS[name]
    runs = [subprocess.run(python + ["-c", *args], cwd=tmp_path,
                           input="typed", capture_output=True, text=True,
                           timeout=60)
            for python in (python_argv(), [sys.executable])]
    served, fresh = ((r.returncode, r.stdout, r.stderr) for r in runs)
    assert served == fresh


def test_a_script_and_a_module_see_what_they_would_see(tmp_path):
    (tmp_path / "pkg").mkdir()
    program = ("import sys\nprint(sys.argv, sys.path[0], __name__, "
               "__file__)\n")
    (tmp_path / "pkg" / "probe.py").write_text(program)
    for command in (["pkg/probe.py", "x"], ["-m", "pkg.probe", "y"]):
        runs = [subprocess.run(python + command, cwd=tmp_path,
                               capture_output=True, text=True, timeout=60)
                for python in (python_argv(), [sys.executable])]
        assert runs[0].stdout == runs[1].stdout != ""
        assert runs[0].returncode == runs[1].returncode == 0


def test_the_signals_the_caller_ignores_are_ignored():
    code = ("import signal; print([signal.getsignal(s) for s in "
            "(signal.SIGINT, signal.SIGTERM)])")
    for ignored in ((), (signal.SIGINT,), (signal.SIGINT, signal.SIGTERM)):
        def ignore(signals=ignored):
            for signum in signals:
                signal.signal(signum, signal.SIG_IGN)

        outs = [subprocess.run(python + ["-c", code], preexec_fn=ignore,
                               capture_output=True, text=True,
                               timeout=60).stdout
                for python in (python_argv(), [sys.executable])]
        assert outs[0] == outs[1] != ""


def test_it_is_a_fork_and_numpy_is_reseeded():
    code = ("import sys, numpy; print('tensorflow' in sys.modules, "
            "numpy.random.randint(1 << 30))")
    outs = [subprocess.run(python_argv() + ["-c", code], capture_output=True,
                           text=True, timeout=60).stdout.split()
            for _ in range(2)]
    assert outs[0][0] == outs[1][0] == "True"  # preloaded: a fork
    assert outs[0][1] != outs[1][1]


def test_another_environment_runs_a_fresh_interpreter():
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0")
    for argv in (python_argv(os.environ) + ["-c"],
                 python_argv(os.environ) + ["-u", "-c"]):
        done = subprocess.run(
            argv + ["import sys; print('tensorflow' in sys.modules)"],
            env=env if "-u" not in argv else None, capture_output=True,
            text=True, timeout=60)
        assert done.stdout == "False\n", done.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_shim_reaches_the_child(signum, tmp_path):
    code = ("import os, sys, time; print(os.getpid(), flush=True); "
            "time.sleep(60)")
    # the signal's default in the shim: a suite started in the background
    # runs with SIGINT ignored, and what the caller ignores the child
    # ignores (the test above)
    proc = subprocess.Popen(python_argv() + ["-c", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(
                                signum, signal.SIG_DFL))
    child = int(proc.stdout.readline())
    assert child != proc.pid
    proc.send_signal(signum)
    assert proc.wait(timeout=30) == -signum
    assert not os.path.exists(f"/proc/{child}")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_as_the_command_starts_ends_it(signum):
    # sent at once, the signal finds the shim starting, waiting for the
    # server, or the child not yet a fresh interpreter (the server's
    # dispositions): wherever it lands, the command ends by it, as a
    # fresh interpreter does
    code = "import time; time.sleep(60)"
    for _ in range(10):
        proc = subprocess.Popen(python_argv() + ["-c", code],
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                                preexec_fn=lambda: signal.signal(
                                    signum, signal.SIG_DFL))
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == -signum


def _state(pid: int) -> str:
    """A process's state letter (``R``, ``S``, ``Z``...), ``"gone"``, or
    ``"killed"`` when a SIGKILL is pending (it runs no more code)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f)
    except FileNotFoundError:
        return "gone"
    pending = int(fields["SigPnd"], 16) | int(fields["ShdPnd"], 16)
    if pending & (1 << (signal.SIGKILL - 1)):
        return "killed"
    return fields["State"].split()[0]


def test_a_killed_shim_takes_its_child_along():
    # the child spins: it is running when its shim is killed
    code = "import os; print(os.getpid(), flush=True)\nwhile True: pass"
    proc = subprocess.Popen(python_argv() + ["-c", code],
                            stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    assert _state(child) in "RS"
    proc.kill()
    assert proc.wait(timeout=30) == -signal.SIGKILL
    # killed as the shim died (dead or not yet reaped), not later
    assert _state(child) in ("gone", "Z", "killed")
