"""Heldout perplexity of a trained ``save_dir``, with the full softmax.

The bar a trained biLM must clear is the unigram perplexity of its
training data, which training records in ``save_dir/training_data.json``.
A direction above it predicts worse than word counts do.

The save_dir may be ours or bilm-tf's
(:mod:`~bilm_keras.save_dirs.save_dir_models`). ``stateful=True`` adds
bilm-tf's ``run_test.py`` figure
(:mod:`~bilm_keras.training.stateful_evaluation`) on the same model.
"""

from __future__ import annotations

import json
import logging
import math
import os
from typing import Optional

import numpy as np

from bilm_keras._utils.graph_function import graph_function
from bilm_keras.data.bilm_tf_heldout import bilm_tf_shard_order
from bilm_keras.data.tf_dataset import make_tf_dataset
from bilm_keras.data.vocab_builder import sidecar_path
from bilm_keras.training.checkpoints import TRAINING_DATA_FILE
from bilm_keras.training.inputs import make_dataset
from bilm_keras.save_dirs.save_dir_models import load_save_dir_model
from bilm_keras.weights.model_detection import as_detected
from bilm_keras.training.stateful_evaluation import (
    stateful_heldout_perplexity,
)

logger = logging.getLogger(__name__)


def training_unigram_perplexity(save_dir: str, vocab_file=None):
    """``(perplexity, source file)`` of the training data's unigram
    perplexity, or ``(None, None)`` when nothing records it.

    ``train`` writes it to ``save_dir/training_data.json``. A vocabulary
    made by ``build_vocab`` has it in its ``.json`` sidecar too.
    """
    candidates = [os.path.join(os.fspath(save_dir), TRAINING_DATA_FILE)]
    if vocab_file is not None:
        candidates.append(sidecar_path(vocab_file))
    for path in candidates:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                value = json.load(f).get("unigram_perplexity")
            if value:
                return float(value), path
    return None, None


# Long (about 110 lines, half of them its docstring): run_test.py's
# flags, then the model loaded, the pass over the heldout text, the
# figures logged and the unigram bar checked. Each step is a few lines
# that read top to bottom, so it stays one function.
def evaluate(
    *,
    save_dir: str,
    vocab_file: str,
    test_prefix: str,
    batch_size: int = 256,
    log_every: int = 100,
    unigram_perplexity: Optional[float] = None,
    checkpoint: Optional[str] = None,
    stateful: bool = False,
) -> dict:
    """Heldout perplexity with the full softmax, every token once.

    The text goes through in ``(batch_size, unroll_steps)`` windows, and
    each sentence starts from zero LSTM states, as ELMo embeds it, for
    every checkpoint family and whatever its options say. So the figure is
    the same at every ``batch_size``.

    It prints the running perplexity. At the end it prints each
    direction's and the mean perplexity, with the files they came from. It
    warns of every direction whose perplexity is above the unigram
    perplexity of the training data. Such a direction predicts worse than
    word counts do, and is broken whatever its training perplexity said.

    Args:
        save_dir: str or DetectedModel. Our training's save_dir,
            bilm-tf's, or a Paddle checkpoint.
        unigram_perplexity: the bar for that warning. None takes the
            training data's, as :func:`training_unigram_perplexity` finds
            it, with no warning when nothing records it.
        checkpoint: the checkpoint to evaluate (``model-200``). None takes
            the newest that reads whole. A damaged newer one is named in a
            line on stderr.
        stateful: also compute bilm-tf's ``run_test.py`` figure on the same
            model, printed after ours. Its LSTM states are carried across
            the whole heldout stream, with unroll 1 and ``batch_size``
            rows. The last incomplete batch is dropped.

    Returns:
        dict with these keys:

        * ``forward_perplexity``, and ``backward_perplexity`` for
          bidirectional models.
        * ``perplexity``: ``exp`` of the mean of the directions' mean
          losses.
        * ``n_tokens`` and ``files``.
        * ``checkpoint``: the prefix read.
        * ``unigram_perplexity``: the bar, or None.
        * ``warnings``: the warning lines printed.
        * with ``stateful``, ``stateful``: a
          :class:`~bilm_keras.training.stateful_evaluation.StatefulPerplexity`.
    """
    model = as_detected(save_dir, checkpoint=checkpoint)
    source = "given"
    if unigram_perplexity is None:
        unigram_perplexity, source = training_unigram_perplexity(
            model.model_dir, vocab_file)
    if stateful:
        bilm_tf_shard_order(test_prefix)  # a missing file before the model
    options, lm, vocab, found = load_save_dir_model(model,
                                                    vocab_file=vocab_file)
    data = make_dataset(test_prefix, vocab, options, test=True)
    num_steps = options.unroll_steps
    # each sentence from zero states, whatever the options say: Paddle's
    # converted options and a continued bilm-tf run's carry the states,
    # which would make the figure depend on batch_size
    lm.reset_states_at_sentence_start = True

    @graph_function
    def eval_step(batch, states):
        out = lm(batch, initial_states=states, training=False)
        return out["loss_sum"], out["n_tokens"], out["final_states"]

    states = lm.zero_states(batch_size)
    loss_sum = {d: 0.0 for d in lm.directions}
    n_tokens = {d: 0.0 for d in lm.directions}
    for i, batch in enumerate(make_tf_dataset(data, batch_size, num_steps), 1):
        sums, counts, states = eval_step(batch, states)
        for d in lm.directions:
            loss_sum[d] += float(sums[d])
            n_tokens[d] += float(counts[d])
        if i % log_every == 0:
            running = np.mean([loss_sum[d] / max(n_tokens[d], 1)
                               for d in lm.directions])
            logger.info("batch %d  running perplexity %.3f", i,
                        math.exp(running))
    if not n_tokens["forward"]:
        raise ValueError(f"{test_prefix}: no tokens to evaluate")
    mean_loss = {d: loss_sum[d] / n_tokens[d] for d in lm.directions}
    result = {f"{d}_perplexity": math.exp(v) for d, v in mean_loss.items()}
    result["perplexity"] = math.exp(np.mean(list(mean_loss.values())))
    result["n_tokens"] = int(n_tokens["forward"])
    result["files"] = list(data.shards)
    result["checkpoint"] = found.path
    logger.info(f"checkpoint: {found.path}")
    logger.info(f"heldout files: {', '.join(result['files'])}")
    for d in lm.directions:
        logger.info(f"{d} perplexity: {result[f'{d}_perplexity']:.3f}")
    logger.info(f"mean perplexity: {result['perplexity']:.3f}  "
                f"({result['n_tokens']} tokens)")
    result["unigram_perplexity"] = unigram_perplexity
    result["warnings"] = [
        f"WARNING: {d} heldout perplexity {result[f'{d}_perplexity']:.1f} "
        f"is above the unigram perplexity of the training data "
        f"({unigram_perplexity:.1f}, from {source}): the {d} LM predicts "
        "worse than word counts do; do not use its embeddings before "
        "finding out why (a diverged run, or heldout text unlike the "
        "training data)"
        for d in lm.directions
        if unigram_perplexity
        and result[f"{d}_perplexity"] > unigram_perplexity
    ]
    for line in result["warnings"]:
        logger.info(line)
    if stateful:
        figure = stateful_heldout_perplexity(
            lm, vocab, test_prefix, batch_size=batch_size,
            bidirectional=options.bidirectional)
        result["stateful"] = figure
        directions = ", ".join(
            f"{d} {p:.3f}" for d, p in figure.direction_perplexities.items())
        logger.info(f"bilm-tf's run_test.py perplexity: "
                    f"{figure.perplexity:.3f}  "
                    f"({directions}; states carried across sentences, "
                    f"{figure.n_batches} batches of {figure.batch_size} rows, "
                    "unroll 1)")
    return result
