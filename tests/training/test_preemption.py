"""Preemption (``bilm_keras/training/preemption.py``): SIGTERM and SIGINT
end a run with a checkpoint of the step reached, and ``restart`` ends with
the weights and heldout perplexity of a run never stopped, bit for bit.

The signals are real: sent to this process (the watch alone) or to a child
``bilm-keras train`` at a step it has printed. Bit for bit is the right
bar: the resumed run computes exactly the uninterrupted run's operations
on the same values (weights, Adagrad, LSTM states and data stream restored
from the checkpoint, dropout masks and softmax samples a function of the
stream's seed and the step), in a process with the same thread settings.
"""

import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest
import tensorflow as tf
from helpers import REPO_ROOT, fixture_options, python_argv, user_env
from local_cluster import local_cluster

from bilm_keras.training import evaluate, restart, train
from bilm_keras.training.preemption import (
    EXIT_STATUS,
    SignalWatch,
    TrainingPreempted,
)
from bilm_keras.training.training_run import TrainingRun

ONE_LAYER = {"dim": 16, "projection_dim": 8, "n_layers": 1}


# ------------------------------------------------------------ the watch
def test_watch_catches_both_signals_once_and_puts_the_handlers_back(
        capfd):
    caught = []
    before = signal.signal(signal.SIGTERM, lambda s, f: caught.append(s))
    # SIGINT's default set here: a suite started in the background runs
    # with SIGINT ignored
    int_before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with SignalWatch(program="prog") as watch:
            assert watch.signum is None
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler runs at the next bytecode
            os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt
            time.sleep(0.05)
            assert watch.signum == signal.SIGTERM
        assert caught == []
        # the test's own handler is back; SIGINT's default too
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert caught == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, before)
        signal.signal(signal.SIGINT, int_before)
    assert capfd.readouterr().err.splitlines() == [
        "prog: SIGTERM received: stopping after this step with a checkpoint",
        "prog: SIGINT received: already stopping; the checkpoint is being "
        "written (SIGKILL stops at once and keeps the previous one)"]


def test_watch_outside_the_main_thread_catches_nothing():
    seen = {}

    def enter():
        with SignalWatch() as watch:
            seen["handler"] = signal.getsignal(signal.SIGTERM)
            seen["signum"] = watch.signum

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    assert seen == {"handler": before, "signum": None}


def test_preempted_message_names_the_checkpoint_and_the_command():
    error = TrainingPreempted(
        signum=signal.SIGTERM, step=217, last_step=6700,
        checkpoint="/runs/a b/model-217",
        restart_args=["--save_dir", "/runs/a b", "--vocab_file", "v.txt",
                      "--train_prefix", "corpus/*.txt"])
    assert error.exit_status == 143 == EXIT_STATUS[signal.SIGTERM]
    assert str(error) == (
        "stopped by SIGTERM at step 217 of 6700: checkpoint /runs/a "
        "b/model-217; continue with: bilm-keras restart --save_dir "
        "'/runs/a b' --vocab_file v.txt --train_prefix 'corpus/*.txt'")
    assert error.message("restart.py").endswith(
        "continue with: restart.py --save_dir '/runs/a b' --vocab_file "
        "v.txt --train_prefix 'corpus/*.txt'")
    interrupted = TrainingPreempted(signum=signal.SIGINT, step=1,
                                    last_step=2, checkpoint=None,
                                    restart_args=[])
    assert interrupted.exit_status == 130
    assert "checkpoint written by the chief worker" in str(interrupted)
    peer = TrainingPreempted(signum=None, step=1, last_step=2,
                             checkpoint=None, restart_args=[])
    assert (peer.signal_name, peer.exit_status) == (
        "a peer's preemption", 143)


def test_max_to_keep_is_at_least_two(tmp_path):
    from bilm_keras._utils.settings import SettingError

    with pytest.raises(SettingError, match=r"^max_to_keep: expected an "
                                           r"integer >= 2, found 1$"):
        TrainingRun(train_prefix="a", vocab_file="v", save_dir=tmp_path,
                    max_to_keep=1)


# --------------------------------------------- in process, a real SIGTERM
def _weights(checkpoint_path):
    """Every value a checkpoint holds, by name; not the save counter (how
    many saves this process wrote) nor the object graph (which names the
    optimizer as Keras numbered it in its process)."""
    reader = tf.train.load_checkpoint(checkpoint_path)
    return {name: reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()
            if not name.startswith(("save_counter",
                                    "_CHECKPOINTABLE_OBJECT_GRAPH"))}


def assert_same_checkpoint(got, want):
    got, want = _weights(got), _weights(want)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


# slow: three short runs in this process (the quick tier's largest test);
# the quick tier keeps the watch's and the message's tests above
@pytest.mark.slow
def test_sigterm_saves_the_step_and_restart_ends_as_never_stopped(
        train_dir, tmp_path, capsys):
    """In this process: SIGTERM from another thread once step 2 is
    written; the run stops with a checkpoint of the step it reached, and
    restart ends with the uninterrupted run's checkpoint, bit for bit
    (weights, Adagrad, data stream, LSTM states)."""
    options = fixture_options(n_epochs=3, lstm=ONE_LAYER)  # 18 steps
    common = dict(train_prefix=str(train_dir / "data.txt"),
                  vocab_file=str(train_dir / "vocab.txt"), log_every=1000)
    never_stopped = train(options, TrainingRun(
        save_dir=str(tmp_path / "whole"), seed=3, save_every=1, max_to_keep=18,
        **common))
    assert never_stopped["step"] == 18

    save_dir = tmp_path / "stopped"
    seen_signal = []
    before = signal.signal(signal.SIGTERM,
                           lambda s, f: seen_signal.append(s))

    def send_sigterm_at_step_2():
        deadline = time.time() + 120
        while not (save_dir / "model-2.index").exists():
            if time.time() > deadline:
                return
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=send_sigterm_at_step_2)
    sender.start()
    try:
        with pytest.raises(TrainingPreempted) as stopped:
            train(options, TrainingRun(
                save_dir=str(save_dir), seed=3, save_every=1, **common))
    finally:
        sender.join()
        signal.signal(signal.SIGTERM, before)
    assert seen_signal == []  # the watch caught it, not the test's handler
    error = stopped.value
    assert 2 <= error.step < 18 and error.exit_status == 143
    assert error.checkpoint == str(save_dir / f"model-{error.step}")
    assert tf.train.latest_checkpoint(str(save_dir)) == error.checkpoint
    # the same step of the uninterrupted run: identical so far
    assert_same_checkpoint(error.checkpoint,
                           str(tmp_path / "whole" / f"model-{error.step}"))
    assert error.restart_args == ["--save_dir", str(save_dir),
                                  "--vocab_file", common["vocab_file"],
                                  "--train_prefix", common["train_prefix"],
                                  "--save_every", "1", "--log_every",
                                  "1000", "--seed", "3"]
    # at least the two newest checkpoints are kept (max_to_keep 2 here)
    capsys.readouterr()
    resumed = restart(TrainingRun(
        save_dir=str(save_dir), save_every=1000, max_to_keep=2, **common))
    assert resumed["step"] == 18
    assert "continuing the data stream after its first" in (
        capsys.readouterr().out)
    assert_same_checkpoint(resumed["checkpoint"], never_stopped["checkpoint"])


# ------------------------------------ child processes: the command itself
def _command(*args):
    """``python -m bilm_keras.cli ARGS``, a child of the tests' command
    server (``helpers.python_argv``): signals sent to it reach the
    command, and it exits as the command does."""
    return python_argv(_env()) + ["-m", "bilm_keras.cli", *map(str, args)]


def _env():
    # TF_CPP_MIN_LOG_LEVEL: the command's own default, given (a child of
    # the command server keeps the level of its import); that the command
    # sets it itself is tests/embedding/test_dump.py's, in a fresh process
    env = user_env()
    env.update(PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="",
               TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    return env


def _train_args(train_dir, save_dir, options_file):
    return ["train", "--train_prefix", train_dir / "data.txt",
            "--vocab_file", train_dir / "vocab.txt", "--save_dir", save_dir,
            "--options", options_file, "--seed", "7", "--log_every", "1",
            "--save_every", "10"]


def _stop_at_step(args, step, signals, timeout=240):
    """Runs ``bilm-keras ARGS``; once it prints ``step STEP/``, sends
    ``signals`` (a signal, or several, 0.02 s apart); returns ``(exit
    status, stdout, stderr)``."""
    proc = subprocess.Popen(_command(*args), cwd=REPO_ROOT, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    out = []
    try:
        for line in proc.stdout:
            out.append(line)
            if line.startswith(f"step {step}/"):
                for k, signum in enumerate(signals):
                    if k:
                        time.sleep(0.02)
                    proc.send_signal(signum)
                break
        out.extend(proc.stdout)
        err = proc.stderr.read()
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, "".join(out), err


@pytest.mark.nightly
@pytest.mark.slow
def test_sigterm_to_train_then_restart_equals_an_uninterrupted_run(
        train_dir, tmp_path):
    """``bilm-keras train`` sent SIGTERM at a step, then SIGTERM and
    SIGINT again as it stops: exit 143, one line naming the checkpoint
    and the command; that command ends with the uninterrupted run's
    weights and heldout perplexity, bit for bit."""
    options_file = tmp_path / "options.json"
    fixture_options(n_epochs=8, use_chars=True).to_json(options_file)
    # 48 steps of the char-CNN model; checkpoints every 10 steps
    whole = tmp_path / "whole"
    done = subprocess.run(
        _command(*_train_args(train_dir, whole, options_file)),
        cwd=REPO_ROOT, env=_env(), capture_output=True, text=True,
        timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

    stopped = tmp_path / "stopped"
    code, out, err = _stop_at_step(
        _train_args(train_dir, stopped, options_file), 13,
        [signal.SIGTERM, signal.SIGTERM, signal.SIGINT])
    assert code == 143, err[-3000:]
    lines = err.strip().splitlines()
    assert lines[0] == ("bilm-keras: SIGTERM received: stopping "
                        "after this step with a checkpoint")
    last = lines[-1]
    assert last.startswith("bilm-keras train: stopped by SIGTERM at step ")
    step = int(last.split(" at step ")[1].split()[0])
    assert 13 <= step < 48
    checkpoint = stopped / f"model-{step}"
    assert f": checkpoint {checkpoint}; continue with: bilm-keras " \
           f"restart --save_dir {stopped} " in last
    assert not [name for name in os.listdir(stopped) if "_temp" in name]
    assert tf.train.latest_checkpoint(str(stopped)) == str(checkpoint)

    # the command of the message, as a user pastes it
    command = last.split("continue with: ")[1]
    done = subprocess.run(command.replace("bilm-keras", " ".join(
        _command()), 1), shell=True, cwd=REPO_ROOT, env=_env(),
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"restored {checkpoint} at step {step}" in done.stdout
    assert_same_checkpoint(str(stopped / "model-48"), str(whole / "model-48"))
    heldout = [evaluate(save_dir=str(d), vocab_file=str(
        train_dir / "vocab.txt"), test_prefix=str(train_dir / "data.txt"),
        batch_size=2)["perplexity"] for d in (whole, stopped)]
    assert heldout[0] == heldout[1]


# the SIGTERM test's save, reached by a second signal
@pytest.mark.nightly
@pytest.mark.slow
def test_ctrl_c_to_restart_exits_130_with_a_checkpoint(train_dir, tmp_path):
    options_file = tmp_path / "options.json"
    fixture_options(n_epochs=30, lstm=ONE_LAYER).to_json(options_file)
    save_dir = tmp_path / "ckpt"
    train(fixture_options(n_epochs=30, lstm=ONE_LAYER), TrainingRun(
        train_prefix=str(train_dir / "data.txt"),
        vocab_file=str(train_dir / "vocab.txt"), save_dir=str(save_dir),
        seed=1, max_steps=3, log_every=1000))
    code, out, err = _stop_at_step(
        ["restart", "--train_prefix", train_dir / "data.txt",
         "--vocab_file", train_dir / "vocab.txt", "--save_dir", save_dir,
         "--log_every", "1"], 6, [signal.SIGINT])
    assert code == 130, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("bilm-keras restart: stopped by SIGINT at step ")
    step = int(last.split(" at step ")[1].split()[0])
    assert tf.train.latest_checkpoint(str(save_dir)).endswith(
        f"model-{step}")
    # the newest two are kept, whatever the signal
    assert {"model-3.index", f"model-{step}.index"} <= set(
        os.listdir(save_dir))


# ------------------------------------------- several workers (MWMS)
def _workers(args, save_dir, *, stop_worker=None, stop_at=None,
             timeout=240):
    """``bilm-keras ARGS --save_dir SAVE_DIR`` as the two workers of a
    MultiWorkerMirroredStrategy cluster on 127.0.0.1 (one save_dir, as on
    a shared file system: the chief writes it); once worker
    ``stop_worker`` prints ``step STOP_AT/``, it (only) gets SIGTERM.
    Returns ``[(exit status, stdout, stderr)]`` per worker."""
    command = _command(*args, "--save_dir", save_dir)
    with local_cluster([command] * 2, _env(), cwd=REPO_ROOT,
                       stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE) as procs:
        timers = [threading.Timer(timeout, p.kill) for p in procs]
        outputs = [[], []]

        def read(index):
            for line in procs[index].stdout:
                outputs[index].append(line)
                if index == stop_worker and line.startswith(
                        f"step {stop_at}/"):
                    procs[index].send_signal(signal.SIGTERM)

        readers = [threading.Thread(target=read, args=(k,))
                   for k in range(2)]
        for t in timers + readers:
            t.start()
        try:
            errs = [p.stderr.read() for p in procs]
            for t in readers:
                t.join()
            for p in procs:
                p.wait()
        finally:
            for t in timers:
                t.cancel()
    return [(p.returncode, "".join(o), e)
            for p, o, e in zip(procs, outputs, errs)]


@pytest.mark.nightly
@pytest.mark.slow
def test_sigterm_to_one_worker_stops_the_cluster_at_one_step(train_dir,
                                                             tmp_path):
    """Two workers: SIGTERM reaches worker 1 only; TensorFlow's
    PreemptionCheckpointHandler makes both write the checkpoint of the
    same step (the chief into save_dir) and exit 143; both restarted, the
    run ends with the uninterrupted cluster's weights."""
    options_file = tmp_path / "options.json"
    fixture_options(n_epochs=6, batch_size=2, lstm=ONE_LAYER).to_json(
        options_file)  # 36 steps
    train_args = ["train", "--train_prefix", train_dir / "data.txt",
                  "--vocab_file", train_dir / "vocab.txt",
                  "--options", options_file, "--seed", "5",
                  "--log_every", "1", "--save_every", "100"]
    whole = _workers(train_args, tmp_path / "whole")
    for code, _, err in whole:
        assert code == 0, err[-3000:]

    save_dir = tmp_path / "stopped"
    stopped = _workers(train_args, save_dir, stop_worker=1, stop_at=4)
    for code, _, err in stopped:
        assert code == 143, err[-3000:]
    chief_line = stopped[0][2].strip().splitlines()[-1]
    worker_line = stopped[1][2].strip().splitlines()[-1]
    assert "stopped by a peer's preemption at step " in chief_line
    assert "stopped by SIGTERM at step " in worker_line
    step = int(chief_line.split(" at step ")[1].split()[0])
    assert step == int(worker_line.split(" at step ")[1].split()[0])
    assert 4 <= step < 36
    checkpoint = save_dir / f"model-{step}"
    assert f"checkpoint {checkpoint}; continue with: " in chief_line
    assert "checkpoint written by the chief worker" in worker_line
    assert tf.train.latest_checkpoint(str(save_dir)) == str(checkpoint)

    restarted = _workers(
        ["restart", "--train_prefix", train_dir / "data.txt",
         "--vocab_file", train_dir / "vocab.txt", "--log_every", "1",
         "--save_every", "100"], save_dir)
    for code, _, err in restarted:
        assert code == 0, err[-3000:]
    assert_same_checkpoint(str(save_dir / "model-36"),
                           str(tmp_path / "whole" / "model-36"))
