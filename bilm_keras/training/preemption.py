"""Preemption: SIGTERM or SIGINT ends a training run with a checkpoint at
the step it has reached, and :func:`~bilm_keras.training.restart`
continues it as if it had never stopped.

A spot instance gets SIGTERM and a short grace period before it is
killed. A cluster scheduler sends SIGTERM before the kill (SLURM
``--signal``). A person presses Ctrl-C (SIGINT). From the first training
step on, :class:`SignalWatch` catches both. The step in flight finishes
and a checkpoint of that step is written: model, Adagrad, step counter,
data stream and LSTM states (:mod:`.checkpoints`, :mod:`.carried_states`).
Then the run raises :class:`TrainingPreempted`, whose one-line message
names the checkpoint and the command that continues it.

``bilm-keras train`` and ``restart`` print that line and exit with
:data:`EXIT_STATUS`. That is 143 (128 + 15) after SIGTERM, the status of a
process SIGTERM ended, which schedulers take for "preempted: requeue". It
is 130 (128 + 2) after SIGINT, as for any interrupted command. A further
signal while the checkpoint is written is noted and waits for it. A save
is never cut short: SIGKILL is the way to stop at once, and keeps the
previous checkpoint.

Before the first step, while the corpus is read and the model built, a
signal acts as it always does. Nothing has been trained since the last
checkpoint, so there is nothing to save.

Several workers (``MultiWorkerMirroredStrategy``) use TensorFlow's own
``tf.distribute.experimental.PreemptionCheckpointHandler``
(:class:`ClusterPreemption`). A signal reaches one worker, and every
worker must write the checkpoint at the same step, since the save is a
collective. The handler agrees on that step through the cluster's
coordination service, without a collective per step.

One process does not use it (:class:`LocalPreemption`). That is the
default strategy, or ``MirroredStrategy`` over its devices. The handler's
documentation supports only ``MultiWorkerMirroredStrategy`` and
``TPUStrategy``. It would save one step after the signal, since the step
it agrees on is the next one, and poll for our signal flag once a second.
And in one process there is nothing to agree on. Both write through the
same :class:`~bilm_keras.training.checkpoints.CheckpointWriter`, so a
preemption checkpoint is an ordinary one.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import tempfile
import threading
from typing import Callable, Optional, Sequence

#: the exit status of ``bilm-keras train``/``restart`` stopped by each
#: signal after a clean save: 128 + the signal's number, as a shell reports
#: a process the signal ended
EXIT_STATUS = {signal.SIGTERM: 128 + signal.SIGTERM,
               signal.SIGINT: 128 + signal.SIGINT}
#: the signals a training run turns into a checkpoint and a clean stop
SIGNALS = tuple(EXIT_STATUS)


class TrainingPreempted(Exception):
    """A training run stopped by a signal after writing a checkpoint at the
    step it had reached.

    ``str(error)`` is one line: the signal, the step, the checkpoint and
    the command that continues the run.

    Attributes:
        signal_name: ``"SIGTERM"``, ``"SIGINT"``, or ``"a peer's
            preemption"`` (another worker of the cluster got the signal).
        exit_status: :data:`EXIT_STATUS` of the signal (143 for a peer's).
        step: the global step of the checkpoint.
        last_step: the step the run was to end at.
        checkpoint: the checkpoint's path (None on a non-chief worker,
            whose copy is scratch).
        restart_args: the arguments of ``bilm-keras restart`` that
            continue the run (:meth:`command`).
    """

    def __init__(self, *, signum: Optional[int], step: int, last_step: int,
                 checkpoint: Optional[str], restart_args: Sequence[str]):
        self.signal_name = (signal.Signals(signum).name if signum
                            else "a peer's preemption")
        self.exit_status = EXIT_STATUS.get(signum, EXIT_STATUS[
            signal.SIGTERM])
        self.step, self.last_step = step, last_step
        self.checkpoint = checkpoint
        self.restart_args = list(restart_args)
        super().__init__(self.message())

    def command(self, program: str = "bilm-keras restart") -> str:
        """The shell command that continues the run (``program``: e.g.
        ``restart.py``, bilm-tf's name)."""
        return " ".join([program, *map(shlex.quote, self.restart_args)])

    def message(self, program: str = "bilm-keras restart") -> str:
        """The one-line message, with ``program`` in the command."""
        where = (f"checkpoint {self.checkpoint}" if self.checkpoint
                 else "checkpoint written by the chief worker")
        return (f"stopped by {self.signal_name} at step {self.step} of "
                f"{self.last_step}: {where}; continue with: "
                f"{self.command(program)}")

    def __reduce__(self):
        return _rebuild, (self.signal_name, self.exit_status, self.step,
                          self.last_step, self.checkpoint, self.restart_args)


def _rebuild(signal_name, exit_status, step, last_step, checkpoint, args):
    error = TrainingPreempted(signum=None, step=step, last_step=last_step,
                              checkpoint=checkpoint, restart_args=args)
    error.signal_name, error.exit_status = signal_name, exit_status
    error.args = (error.message(),)
    return error


class SignalWatch:
    """A context manager that catches SIGTERM and SIGINT while entered.
    The handlers before it are put back on exit.

    The first signal sets :attr:`signum`, and a line on stderr says the
    run stops after this step with a checkpoint. A later one only says it
    is already stopping. Signal handlers can be set only in the main
    thread. Entered in another one, it catches nothing, and the signals
    act as they would without it.

    Attributes:
        signum: the first signal caught, or None.
    """

    def __init__(self, program: str = "bilm-keras"):
        self.program = program
        self.signum: Optional[int] = None
        self._previous = {}

    def __enter__(self) -> "SignalWatch":
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                self._previous[signum] = signal.signal(signum, self._caught)
        return self

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _caught(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        if self.signum is None:
            self.signum = signum
            note = (f"{name} received: stopping after this step with a "
                    f"checkpoint")
        else:
            note = (f"{name} received: already stopping; the checkpoint "
                    f"is being written (SIGKILL stops at once and keeps "
                    f"the previous one)")
        # os.write: print() may be in the middle of a write of its own
        os.write(2, f"{self.program}: {note}\n".encode())


class LocalPreemption:
    """One process: after each step, if a signal was caught, write the
    checkpoint of that step (unless it was just written) and raise
    :class:`TrainingPreempted`.

    Args:
        watch: the entered :class:`SignalWatch`.
        save: ``save(step) -> path``, the run's checkpoint writer (which
            writes nothing new for a step it has just saved).
        preempted: ``preempted(signum, step, path) -> TrainingPreempted``.
    """

    def __init__(self, watch: SignalWatch, save: Callable[[int], str],
                 preempted: Callable[..., TrainingPreempted]):
        self.watch, self.save, self.preempted = watch, save, preempted

    def after_step(self, step: int) -> None:
        if self.watch.signum is not None:
            path = self.save(step)
            raise self.preempted(self.watch.signum, step, path)

    def close(self) -> None:
        pass


class ClusterPreemption:
    """Several workers: TensorFlow's ``PreemptionCheckpointHandler`` agrees
    on the step at which every worker writes the checkpoint, then all stop.

    Our :class:`SignalWatch` is its ``termination_watcher_fn``, so SIGINT
    counts as SIGTERM does and the handler installs no handler of its own.
    Our writer is its ``save_fn`` and the raise of
    :class:`TrainingPreempted` its ``exit_fn``.

    It is given a checkpoint manager of its own over an empty checkpoint
    in a scratch folder. When created, the handler restores its manager's
    latest checkpoint. That would bypass the checks of our restore, the
    options' shapes and the batch size of the saved states. With its
    ``save_fn`` it never writes through that manager.

    Args:
        strategy: the ``MultiWorkerMirroredStrategy`` (its
            ``cluster_resolver``).
        watch, save, preempted: as :class:`LocalPreemption`'s.
    """

    def __init__(self, strategy, watch: SignalWatch,
                 save: Callable[[int], str],
                 preempted: Callable[..., TrainingPreempted]):
        import tensorflow as tf

        self.watch, self.save, self.preempted = watch, save, preempted
        self._step, self._path = 0, None
        self._scratch = tempfile.mkdtemp(prefix="bilm_preemption_")
        config = tf.distribute.experimental.TerminationConfig(
            termination_watcher_fn=lambda: self.watch.signum is not None,
            exit_fn=self._exit, grace_period=0, save_fn=self._save)
        self.handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            strategy.cluster_resolver,
            tf.train.CheckpointManager(tf.train.Checkpoint(), self._scratch,
                                       max_to_keep=1),
            termination_config=config)

    def after_step(self, step: int) -> None:
        self._step = step
        self.handler.save_checkpoint_if_preempted(step)

    def _save(self, step: int) -> None:
        self._path = self.save(step)

    def _exit(self) -> None:
        self.close()
        raise self.preempted(self.watch.signum, self._step, self._path)

    def close(self) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)


def watch_preemption(strategy, watch: SignalWatch,
                     save: Callable[[int], str],
                     preempted: Callable[..., TrainingPreempted]):
    """The preemption check of a run on ``strategy``: a
    :class:`ClusterPreemption` across several workers, else a
    :class:`LocalPreemption`."""
    import tensorflow as tf

    from bilm_keras.training.strategy import cluster_workers

    if (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and cluster_workers() > 1):
        return ClusterPreemption(strategy, watch, save, preempted)
    return LocalPreemption(watch, save, preempted)
