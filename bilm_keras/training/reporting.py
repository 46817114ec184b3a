"""What a training run reports as it goes: every ``log_every`` steps a
progress line on stdout and TensorBoard scalars (``save_dir/logs``).

The scalars: ``train_perplexity`` (the mean over directions) and
``train_perplexity/{direction}``, ``grad_norm`` and ``tokens_per_second``.
"""

from __future__ import annotations

import logging
import math
import time

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

logger = logging.getLogger(__name__)


class TrainingProgress:
    """The training perplexity (mean and per direction), gradient norm and
    speed over the steps since the last report: printed, and written as
    TensorBoard scalars.

    Args:
        directions: the model's directions (``"forward"``, ``"backward"``).
        writer: a ``tf.summary`` writer (a no-op one off the chief).
        last_step: the run's last global step (for the ETA).
        tokens_per_step: ``batch_size * unroll_steps``.

    ``perplexity``, ``direction_perplexity`` and ``tokens_per_second`` are
    the last report's (NaN before the first).
    """

    def __init__(self, directions, writer, *, last_step: int,
                 tokens_per_step: int):
        self.directions = list(directions)
        self.writer = writer
        self.last_step = last_step
        self.tokens_per_step = tokens_per_step
        self.perplexity = float("nan")
        self.direction_perplexity = {d: float("nan") for d in directions}
        self.tokens_per_second = float("nan")
        self._start_window()

    def _start_window(self) -> None:
        self.loss, self.steps = 0.0, 0
        self.direction_loss = {d: 0.0 for d in self.directions}
        self.start = time.perf_counter()

    def add(self, loss, direction_losses: dict) -> None:
        """One step's losses (they stay tensors: no sync per step)."""
        self.loss += loss
        for d in self.directions:
            self.direction_loss[d] += direction_losses[d]
        self.steps += 1

    def report(self, step: int, grad_norm) -> None:
        """The window's line and scalars at global ``step``. A new window
        starts."""
        elapsed = time.perf_counter() - self.start
        self.perplexity = math.exp(float(self.loss) / self.steps)
        self.direction_perplexity = {
            d: math.exp(float(v) / self.steps)
            for d, v in self.direction_loss.items()
        }
        self.tokens_per_second = (self.steps * self.tokens_per_step
                                  / elapsed)
        eta = (self.last_step - step) * elapsed / self.steps
        each = "".join(
            f"  {d} {p:.2f}" for d, p in self.direction_perplexity.items()
        ) if len(self.direction_perplexity) > 1 else ""
        logger.info(f"step {step}/{self.last_step}  "
                    f"train_perplexity {self.perplexity:.2f}{each}  "
                    f"grad_norm {float(grad_norm):.3f}  "
                    f"tokens/s {self.tokens_per_second:.0f}  "
                    f"ETA {_format_eta(eta)}")
        with self.writer.as_default(step=step):
            _scalar_summary("train_perplexity", self.perplexity, step)
            for d, p in self.direction_perplexity.items():
                _scalar_summary(f"train_perplexity/{d}", p, step)
            _scalar_summary("grad_norm", grad_norm, step)
            _scalar_summary("tokens_per_second", self.tokens_per_second,
                            step)
        self._start_window()


def _scalar_summary(tag: str, value, step: int) -> None:
    """``tf.summary.scalar`` without the tensorboard package (not a
    dependency): the same op with the scalars plugin's metadata."""
    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    tf.summary.write(tag, tf.cast(value, tf.float32), step=step,
                     metadata=metadata)


def _format_eta(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
