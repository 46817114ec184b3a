"""The training loop: :func:`train` a biLM from scratch, :func:`restart` it
from its checkpoint.

Both take their settings as one
:class:`~bilm_keras.training.training_run.TrainingRun` and run
:func:`_run_training`, which reads top to bottom:

1. The options. The flags override the file. The vocabulary size and the
   token count come from the data, in one pass over the corpus.
2. The model and its Adagrad, from :mod:`.model_setup`. It is new,
   adapted from a published biLM with ``init_weights`` or
   ``init_checkpoint``, or to be restored from ours or bilm-tf's
   :mod:`.bilm_tf_restart`.
3. The checkpoint, from :mod:`.checkpoints`. It is restored when
   resuming, and a new run is refused in a ``save_dir`` that has one. The
   resolved ``options.json`` and ``training_data.json`` go beside it.
4. The steps to run and their data stream, from :mod:`.inputs`. After a
   crash the stream goes on where the checkpoint left it.
5. The steps, from :mod:`.train_step`. A progress line and TensorBoard
   scalars come every ``log_every`` steps, from :mod:`.reporting`. A
   checkpoint is written every ``save_every`` steps, at the end of the
   epochs or of ``max_steps``, and when a signal stops the run, from
   :mod:`.preemption`.

A checkpoint holds all a step needs to go on, see :mod:`.checkpoints`.
That is the weights, Adagrad, the step counter, the data stream and the
LSTM states of :mod:`.carried_states`. Each step's dropout masks and
softmax samples are a function of the stream's seed and the step. So a
run stopped at any step, by SIGTERM, Ctrl-C or ``max_steps``, and
continued by :func:`restart` ends with the weights of a run never
stopped, bit for bit.

One epoch is ``n_train_tokens / (batch_size * unroll_steps)`` steps of the
global batch ``batch_size``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time
from typing import NamedTuple, Optional

import keras
import tensorflow as tf

from bilm_keras._utils.atomic_files import write_text_atomic
from bilm_keras._utils.disk_full import reporting_disk_full
from bilm_keras.data.corpus import CorpusError, count_corpus, list_shards
from bilm_keras.data.unigram import unigram_perplexity
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.options import OPTIONS_FILE, BiLMOptions
from bilm_keras.training.adaptation import (
    check_weight_file,
    init_softmax,
    init_softmax_from_checkpoint,
    softmax_variables,
)
from bilm_keras.training.bilm_tf_restart import (
    bilm_tf_run_options,
    restore_bilm_tf_run,
    set_aside_bilm_tf_state_file,
)
from bilm_keras.training.carried_states import (
    CarriedStates,
    as_step_states,
)
from bilm_keras.training.checkpoints import TRAINING_DATA_FILE, CheckpointWriter
from bilm_keras.save_dirs.our_run import CheckpointError
from bilm_keras.data.vocab_for_options import check_vocab_fits, load_vocab
from bilm_keras.training.inputs import distributed_batches, steps_per_epoch
from bilm_keras.training.lm_warmup import LMWarmup
from bilm_keras.training.model_setup import build_model
from bilm_keras.save_dirs.options_file import write_options
from bilm_keras.training.paddle_adaptation import (
    keep_paddle_softmax,
    read_init_checkpoint,
    set_paddle_accumulators,
)
from bilm_keras.training.preemption import (
    SignalWatch,
    TrainingPreempted,
    watch_preemption,
)
from bilm_keras.training.reporting import TrainingProgress
from bilm_keras.training.run_checkpoint import (
    DATA_STREAM,
    LSTM_STATES,
    RunCheckpoint,
)
from bilm_keras.training.strategy import is_chief, make_strategy
from bilm_keras.training.threads import configure_training_threads
from bilm_keras.training.train_step import make_train_step
from bilm_keras.training.training_run import TrainingRun
from bilm_keras.weights.checkpoint_files import list_checkpoints
from bilm_keras.weights.model_detection import (
    OUR_RUN,
    TF1_CHECKPOINT,
    SaveDirCheckpoint,
    locate_checkpoint,
)

logger = logging.getLogger(__name__)


def train(options: BiLMOptions, run: TrainingRun) -> dict:
    """Trains a biLM from scratch. :func:`restart` continues one.

    Args:
        options: BiLMOptions. The model and training options.
            ``n_tokens_vocab`` is filled from ``run.vocab_file``, and
            ``run``'s ``batch_size``, ``n_epochs`` and ``n_train_tokens``
            override theirs.
        run: TrainingRun. The run's settings, each field documented in
            :class:`~bilm_keras.training.training_run.TrainingRun`. Its
            ``save_dir`` must not hold a checkpoint yet.

    Returns:
        dict with these keys.

        - ``step``: the final global step.
        - ``perplexity``: the train perplexity of the last log window, of
          the sampled softmax, the mean over directions.
        - ``direction_perplexity``: ``{direction: perplexity}`` over the
          same window.
        - ``tokens_per_second``.
        - ``seconds``: the steps' wall time.
        - ``checkpoint``: the last one written, None on a non-chief
          worker.
        - ``options``: the options as resolved.
        - ``model``: the trained :class:`LanguageModel`.

    Raises:
        CheckpointError: ``save_dir`` holds a checkpoint already.
        CorpusError: ``train_prefix`` matches no file, or no tokens.
        VocabularyError: ``vocab_file`` is missing or lacks ``<S>``,
            ``</S>`` or ``<UNK>``.
        TrainingPreempted: SIGTERM or SIGINT, i.e. Ctrl-C, stopped the
            run after its first step. A checkpoint of the step reached was
            written first. The message names it and the command that
            continues the run, see :mod:`.preemption`. Exit with its
            ``exit_status`` to tell a scheduler.
        DiskFullError: a checkpoint or another file of ``save_dir`` did
            not fit. The checkpoints before it are as they were.

    Example:
        >>> run = TrainingRun(train_prefix="data/*.txt",
        ...                   vocab_file="vocab.txt", save_dir="ckpt/")
        >>> result = train(BiLMOptions.from_json("options.json"), run)
    """
    return _run_training(_checked_options(options), _checked_run(run))


def restart(run: TrainingRun) -> dict:
    """Continues training from the latest checkpoint of ``run.save_dir``.

    The step counter and Adagrad's accumulators continue. Without
    ``run.n_epochs``, after a crash, the run goes on to the step count the
    saved options describe, on the data stream the checkpoint recorded.
    With it, the run trains ``n_epochs`` more epochs of ``train_prefix``
    on a new data stream. That is fine-tuning on new data, and
    ``n_train_tokens`` is then counted from that corpus unless given.

    ``save_dir`` may be bilm-tf's, told from its checkpoint's variable
    names. The run then continues from its weights, softmax, Adagrad
    accumulators and step, see :func:`~bilm_keras.training.
    bilm_tf_restart.restore_bilm_tf_run`. It runs on a new data stream,
    since bilm-tf saved no position. Its options are as bilm-tf wrote
    them, ``n_train_tokens`` included, which ``n_train_tokens`` overrides,
    also with ``n_epochs``. Its LSTM states are carried across sentences
    as bilm-tf trained, unless its ``options.json`` says
    ``reset_states_at_sentence_start``, see
    :func:`~bilm_keras.training.bilm_tf_restart.bilm_tf_run_options`.
    Our checkpoints go beside bilm-tf's, and its ``checkpoint`` state file
    is kept as ``checkpoint.bilm-tf``. A damaged newest checkpoint, ours
    or bilm-tf's, is named in one line and the newest that reads whole is
    used.

    The result is that of :func:`train`.

    Raises:
        CheckpointError: ``save_dir`` has no ``options.json`` or no
            checkpoint, or one that does not fit the options.
        OptionsError: ``vocab_file``'s size is not the checkpoint's.
    """
    run = _checked_run(run)
    options_file = os.path.join(run.save_dir, OPTIONS_FILE)
    if not os.path.exists(options_file):
        raise CheckpointError(
            f"{run.save_dir}: no {OPTIONS_FILE}; is this a train_elmo.py "
            "--save_dir?"
        )
    options = BiLMOptions.from_json(options_file)
    _refuse_adaptation(run)
    # the checkpoint the run continues, found once: the newest that reads
    # whole (a damaged newer one is named when it is opened)
    found = locate_checkpoint(run.save_dir)
    if found.kind == TF1_CHECKPOINT:
        # bilm-tf's run goes on as it trained (:func:`bilm_tf_run_options`)
        # and with its epoch: its n_train_tokens, not a count of the corpus
        options = bilm_tf_run_options(run.save_dir)
        if run.n_train_tokens is None:
            run = run.replace(n_train_tokens=options.n_train_tokens)
    return _run_training(options, run, resumed=found,
                         more_epochs=run.n_epochs is not None)


def _checked_options(options) -> BiLMOptions:
    if not isinstance(options, BiLMOptions):
        raise TypeError(f"options: expected a BiLMOptions, found "
                        f"{type(options).__name__}")
    return options


def _checked_run(run) -> TrainingRun:
    if not isinstance(run, TrainingRun):
        raise TypeError(f"run: expected a TrainingRun, found "
                        f"{type(run).__name__}")
    return run


def _run_training(options: BiLMOptions, run: TrainingRun, *,
                  resumed: Optional[SaveDirCheckpoint] = None,
                  more_epochs: bool = False) -> dict:
    """The run behind :func:`train` and :func:`restart`.

    ``options`` are the model's, with the run's overrides still to apply.
    They are trained as ``run`` says, in the module doc's five phases. The
    result is that of :func:`train`.

    Args:
        resumed: SaveDirCheckpoint or None. The checkpoint of ``save_dir``
            that :func:`restart` found, restored: the weights, step
            counter, Adagrad's accumulators, data stream and warm-up. None
            starts a new run, refused in a ``save_dir`` with a checkpoint.
        more_epochs: bool. With ``resumed``, ``n_epochs`` counts from the
            checkpoint's step, on a new data stream. ``n_train_tokens`` is
            then counted from ``train_prefix`` unless given. False goes on
            to ``n_epochs`` epochs from step 0.
    """
    resume = resumed is not None
    bilm_tf_init = _check_adaptation(run)
    _configure_threads(run)  # before any op: TensorFlow fixes them then
    strategy = make_strategy(n_gpus=run.n_gpus, devices=run.devices)

    # 1. options: flags override the file; the vocabulary size and the
    #    token count come from the data, never by hand
    options, vocab, corpus, token_counts = _resolve_options(
        options, run, resume=resume, more_epochs=more_epochs)
    _check_batch_splits(options, strategy.num_replicas_in_sync)
    if run.seed is not None:
        keras.utils.set_random_seed(run.seed)

    with strategy.scope():
        # 2. model and optimizer: new, adapted, or placeholders that the
        #    checkpoint fills
        lm, optimizer = _build_model(options, run, vocab, corpus,
                                     token_counts, resume=resume,
                                     bilm_tf_init=bilm_tf_init)
        del token_counts  # a large corpus's vocabulary, not needed now

        # 3. checkpoint: restored or new; options and corpus beside it
        saved = _open_checkpoint(lm, optimizer, options, run,
                                 resumed=resumed)
        if is_chief(strategy):
            _write_run_files(run.save_dir, options, corpus,
                             train_prefix=run.train_prefix,
                             vocab_file=run.vocab_file)

        # 4. the steps to run, their data and the step function
        steps = _plan_steps(saved, strategy, options, run, vocab,
                            more_epochs=more_epochs)

        # 5. the steps: train, log, checkpoint; SIGTERM or SIGINT end them
        #    with a checkpoint of the step reached
        return _train_steps(saved, steps, strategy, options, run,
                            more_epochs=more_epochs)


# ------------------------------------------------- 1. options and corpus
def _refuse_adaptation(run: TrainingRun) -> None:
    """A restart continues its checkpoint's weights: ``init_weights`` and
    ``init_checkpoint`` are refused before the checkpoint is looked for."""
    if run.adapts:
        flag = ("--init_weights" if run.init_weights is not None
                else "--init_checkpoint")
        raise CheckpointError(
            f"{flag} starts a new run; a checkpoint continues with "
            f"its own weights (restart.py, without {flag})"
        )


def _check_adaptation(run: TrainingRun) -> Optional[SaveDirCheckpoint]:
    """``init_weights`` or ``init_checkpoint``, checked before any corpus
    pass (their settings were checked by :class:`TrainingRun`). Returns
    the bilm-tf checkpoint ``init_checkpoint`` names, as detection found
    it once (None: none, or a Paddle checkpoint)."""
    if not run.adapts:
        return None
    if run.init_weights is not None:
        check_weight_file(run.init_weights)
        return None
    init, found = run.init_model, None
    # a Paddle checkpoint is read whole, and checked, when the model is built
    if not init.is_paddle:
        found = init.run_checkpoint
        if found is None:
            raise CheckpointError(
                f"--init_checkpoint {run.init_checkpoint}: expected a "
                f"bilm-tf save_dir or a Paddle checkpoint, found a "
                f"{init.family} model with no TF1 checkpoint that reads "
                "whole (start from its weights with --init_weights)")
        if found.kind != TF1_CHECKPOINT:
            raise CheckpointError(
                f"--init_checkpoint {run.init_checkpoint}: {found.name} is "
                "a bilm_keras checkpoint (continue its run with restart "
                "--n_epochs, or start from its dump-weights file with "
                "--init_weights)")
    if run.init_vocab_file is not None and not os.path.isfile(
            run.init_vocab_file):
        raise CheckpointError(
            f"--init_vocab_file {run.init_vocab_file}: no such file")
    return found


def _resolve_options(options: BiLMOptions, run: TrainingRun, *,
                     resume: bool, more_epochs: bool) -> tuple:
    """``(options, vocab, corpus, token_counts)``.

    ``options`` take the run's overrides that are not None:
    ``batch_size``, ``n_epochs`` and ``n_train_tokens``. ``n_tokens_vocab``
    comes from ``vocab_file``. ``n_train_tokens`` is counted from
    ``train_prefix`` unless the run or the file gives it. With
    ``more_epochs``, i.e. fine-tuning, the count is always of this corpus,
    whatever the checkpoint's options say.

    Raises:
        CorpusError: ``train_prefix`` matches no file, or no tokens.
        OptionsError: resuming with a vocabulary of another size.
    """
    overrides = dict(batch_size=run.batch_size, n_epochs=run.n_epochs,
                     n_train_tokens=run.n_train_tokens)
    options = options.replace(**{
        name: value for name, value in overrides.items()
        if value is not None})
    vocab = load_vocab(run.vocab_file, options)
    list_shards(run.train_prefix)  # a missing/empty glob fails here
    if resume:
        check_vocab_fits(options, vocab, run.vocab_file,
                         os.path.join(run.save_dir, OPTIONS_FILE))
    options = options.replace(n_tokens_vocab=vocab.size)
    corpus, token_counts = _count_training_corpus(run.train_prefix, vocab)
    if options.n_train_tokens is None or (
            more_epochs and run.n_train_tokens is None):
        options = options.replace(n_train_tokens=corpus["n_tokens"])
    return options, vocab, corpus, token_counts


def _count_training_corpus(train_prefix, vocab) -> tuple:
    """One pass over the text: ``(stats, token_counts)`` of
    :func:`count_corpus`, the stats with the corpus's
    ``unigram_perplexity`` (the bar evaluate() holds each direction to).
    The token counts also set an adapted softmax's bias.

    Raises:
        CorpusError: the corpus has no tokens.
    """
    corpus, token_counts = count_corpus(train_prefix)
    if corpus["n_tokens"] == 0:
        raise CorpusError(
            f"{train_prefix}: no tokens to train on ({corpus['n_files']}"
            f" file(s), {corpus['n_skipped_lines']} empty or "
            "whitespace-only line(s) skipped)"
        )
    corpus["unigram_perplexity"] = unigram_perplexity(
        token_counts, corpus["n_sentences"], vocab)
    return corpus, token_counts


def _check_batch_splits(options: BiLMOptions, n_replicas: int) -> None:
    """The global batch must split evenly over the replicas."""
    if options.batch_size % n_replicas:
        raise ValueError(
            f"--batch_size: expected a multiple of the {n_replicas} "
            f"replicas, found {options.batch_size}"
        )


def _configure_threads(run: TrainingRun) -> None:
    """TensorFlow's CPU thread pools, as the run sets them."""
    threads = configure_training_threads(run.intra_op_threads,
                                         run.inter_op_threads)
    if threads is not None:
        logger.info(f"TensorFlow CPU threads: {threads[0] or 'default'} "
                    f"per op, "
                    f"{threads[1] or 'default'} ops at a time")


# ------------------------------------------------------------- 2. model
def _build_model(options: BiLMOptions, run: TrainingRun, vocab, corpus,
                 token_counts, *, resume: bool,
                 bilm_tf_init: Optional[SaveDirCheckpoint]) -> tuple:
    """``(lm, optimizer)``, new or adapted from a trained LM.

    ``init_weights`` and ``init_checkpoint`` get a new softmax for the
    run's vocabulary, keeping the rows a checkpoint shares.
    ``bilm_tf_init`` is a bilm-tf checkpoint, as :func:`_check_adaptation`
    took it from detection. When resuming, every variable is restored
    after, so they start as placeholders, not random values."""
    # a Paddle checkpoint (persistables directory, .pdparams): read once
    init = run.init_model
    paddle = (read_init_checkpoint(init.checkpoint, run.init_vocab_file)
              if init is not None and init.is_paddle else None)
    with (placeholder_weights() if resume else contextlib.nullcontext()):
        lm, optimizer = build_model(
            options, seed=run.seed, unroll_windows=run.fast_path,
            dedup_tokens=run.fast_path, init_weights=run.init_weights,
            init_checkpoint=bilm_tf_init, init_paddle=paddle,
            precision=run.precision)
    if run.adapts:
        init_softmax(lm, run.softmax_bias, token_counts=token_counts,
                     n_sentences=corpus["n_sentences"], vocab=vocab)
    if paddle is not None:
        # Paddle's softmax rows and Adagrad state, where they fit
        kept = keep_paddle_softmax(lm, paddle, vocab=vocab,
                                   vocab_file=run.vocab_file)
        set_paddle_accumulators(lm, optimizer, paddle, *kept)
    elif bilm_tf_init is not None:
        init_softmax_from_checkpoint(
            lm, bilm_tf_init, init_vocab_file=run.init_vocab_file,
            vocab=vocab, vocab_file=run.vocab_file)
    return lm, optimizer


# ------------------------------------------------------------ 3. checkpoint
def _open_checkpoint(lm, optimizer, options: BiLMOptions,
                     run: TrainingRun, *,
                     resumed: Optional[SaveDirCheckpoint]) -> RunCheckpoint:
    """The run's :class:`RunCheckpoint`. When resuming, it is restored
    from ``resumed``, ours or bilm-tf's values handed to it. Otherwise it
    is new.

    Raises:
        CheckpointError: resuming, and the checkpoint does not fit. Or not
            resuming, and ``save_dir`` holds one already.
    """
    save_dir = run.save_dir
    saved = RunCheckpoint(lm, optimizer, batch_size=options.batch_size,
                          freeze_lm_steps=run.freeze_lm_steps)
    if resumed is None:
        if list_checkpoints(save_dir):
            raise CheckpointError(
                f"{save_dir}: already holds a checkpoint; continue it with "
                "restart.py or choose an empty --save_dir"
            )
        return saved
    # a damaged newer checkpoint, passed over, is named
    note = resumed.fallback_note()
    if note is not None:
        logger.warning(note)
    if resumed.kind == OUR_RUN:
        restored = saved.restore(save_dir, resumed.path)
        logger.info(f"restored {restored} at step "
                    f"{int(optimizer.iterations.numpy())}")
    else:  # bilm-tf's: ours go beside it, its state file set aside
        step = restore_bilm_tf_run(resumed, saved, save_dir=save_dir)
        set_aside_bilm_tf_state_file(save_dir)
        logger.info(f"restored bilm-tf's checkpoint {resumed.path} "
                    f"({resumed.generation} names) at step {step}; bilm-tf "
                    "saved no data position: a new data stream starts")
    return saved


def _restart_args(run: TrainingRun, *, more_epochs: bool,
                  steps_left: int) -> list:
    """The arguments of ``bilm-keras restart`` that continue ``run``: its
    files and the flags it set. A run of new epochs, ``restart
    --n_epochs``, goes on for the steps it had left, on a new stream of
    its data. Any other continues its stream to the end of its epochs."""
    args = ["--save_dir", run.save_dir, "--vocab_file", run.vocab_file,
            "--train_prefix", run.train_prefix]
    defaults = TrainingRun(train_prefix="-", vocab_file="-", save_dir="-")
    for name in ("n_gpus", "save_every", "log_every", "seed",
                 "intra_op_threads", "inter_op_threads", "precision"):
        value = getattr(run, name)
        if value is not None and value != getattr(defaults, name):
            args += [f"--{name}", str(value)]
    if more_epochs:
        args += ["--n_epochs", str(run.n_epochs), "--max_steps",
                 str(steps_left)]
    return args

def _write_run_files(save_dir: str, options: BiLMOptions, corpus: dict, *,
                     train_prefix, vocab_file) -> None:
    """The resolved ``options.json`` (with copies of the dictionaries a
    converted ELMoForManyLangs model's options name) and the corpus's
    ``training_data.json``, beside the checkpoints."""
    os.makedirs(save_dir, exist_ok=True)
    write_options(options, os.path.join(save_dir, OPTIONS_FILE))
    write_text_atomic(
        os.path.join(save_dir, TRAINING_DATA_FILE),
        json.dumps(dict(train_prefix=os.fspath(train_prefix),
                        vocab_file=os.fspath(vocab_file), **corpus),
                   indent=2) + "\n",
    )


# ------------------------------------------------- 4. the steps to run
class _Steps(NamedTuple):
    """What phase 4 prepares for phase 5."""

    start: int  # the global step the run starts from
    last: int  # and ends at
    batches: object  # the distributed batches, from the step after start
    train_step: object  # (batch, states) -> (loss, norm, states, losses)


def _plan_steps(saved: RunCheckpoint, strategy, options: BiLMOptions,
                run: TrainingRun, vocab, *, more_epochs: bool) -> _Steps:
    """The steps to run, their data and the step function. The data is
    the checkpoint's stream continued after a crash, else a new one. The
    LSTM states the first step starts from are in
    ``saved.carried.current``."""
    lm, stream, carried = saved.lm, saved.stream, saved.carried
    start = int(saved.optimizer.iterations.numpy())
    last = _last_step(options, start, more_epochs=more_epochs,
                      max_steps=run.max_steps)
    if last <= start:
        logger.info(f"step {start}: the run's {options.n_epochs} epoch(s) are "
                    "done, nothing to train (restart --n_epochs N trains N "
                    "more)")
    stream_seed, skip = stream.resolve(
        restored=DATA_STREAM in saved.restored,
        continue_stream=not more_epochs, step=start,
        batch_size=options.batch_size, seed=run.seed)
    if skip:
        logger.info(f"continuing the data stream after its first {skip} "
                    "batches")
    batches = distributed_batches(
        strategy, run.train_prefix, vocab, options, stream_seed, skip)
    # the step's dropout masks and softmax samples: a function of the
    # stream's seed and the step, as they were before a stop
    train_step = _make_step(lm, saved.optimizer, strategy, options,
                            seed=stream.base_seed, warmup=saved.warmup,
                            start_step=start, precision=run.precision)
    if stream.continued and LSTM_STATES in saved.restored:
        # the LSTM states the uninterrupted run's next step starts from
        carried.current = carried.distribute(strategy)
    else:
        per_replica = options.batch_size // strategy.num_replicas_in_sync
        carried.current = (
            strategy.experimental_distribute_values_from_function(
                lambda ctx: lm.zero_states(per_replica)))
    carried.current = as_step_states(strategy, carried.current)
    logger.debug("training steps %d..%d on %d replica(s)", start, last,
                strategy.num_replicas_in_sync)
    return _Steps(start, last, batches, train_step)


def _last_step(options: BiLMOptions, start_step: int, *, more_epochs: bool,
               max_steps: Optional[int]) -> int:
    """The global step the run ends at: the end of its epochs, or
    ``max_steps`` after ``start_step`` if that comes first."""
    if more_epochs:
        last_step = start_step + options.n_epochs * steps_per_epoch(options)
    else:
        last_step = options.n_epochs * steps_per_epoch(options)
    if max_steps is not None:
        last_step = min(last_step, start_step + max_steps)
    return last_step


def _make_step(lm, optimizer, strategy, options: BiLMOptions, *, seed,
               warmup: LMWarmup, start_step: int, precision: str):
    """The step function of :func:`make_train_step`. When adapting, the
    steps up to ``warmup.until`` train only the softmax."""
    train_step = make_train_step(lm, optimizer, strategy, options,
                                 dropout_seed=seed, precision=precision)
    return warmup.wrap(
        train_step,
        lambda: make_train_step(lm, optimizer, strategy, options,
                                dropout_seed=seed,
                                variables=softmax_variables(lm),
                                precision=precision),
        start_step=start_step,
    )


# ------------------------------------------------------------- 5. the steps
def _train_steps(saved: RunCheckpoint, steps: _Steps, strategy,
                 options: BiLMOptions, run: TrainingRun, *,
                 more_epochs: bool) -> dict:
    """Runs the planned steps with their checkpoints, progress lines and
    TensorBoard scalars. A signal ends them with a checkpoint of the step
    reached and :class:`TrainingPreempted`. Returns :func:`train`'s
    result."""
    chief = is_chief(strategy)
    # non-chief workers write to a scratch directory (collective saves)
    ckpt_dir = (run.save_dir if chief
                else tempfile.mkdtemp(prefix="bilm_w"))
    writer = saved.writer(ckpt_dir, max_to_keep=run.max_to_keep,
                          strategy=strategy)
    summaries = (tf.summary.create_file_writer(
        os.path.join(run.save_dir, "logs")) if chief
        else tf.summary.create_noop_writer())
    run_start = time.perf_counter()
    progress = TrainingProgress(
        saved.lm.directions, summaries, last_step=steps.last,
        tokens_per_step=options.batch_size * options.unroll_steps)

    def preempted(signum, step, checkpoint_path):
        return TrainingPreempted(
            signum=signum, step=step, last_step=steps.last,
            checkpoint=checkpoint_path if chief else None,
            restart_args=_restart_args(run, more_epochs=more_epochs,
                                       steps_left=steps.last - step))

    try:
        with SignalWatch() as watch, reporting_disk_full(run.save_dir):
            preemption = watch_preemption(strategy, watch, writer.save,
                                          preempted)
            try:
                path = _run_steps(steps, saved.carried, run,
                                  progress=progress, writer=writer,
                                  preemption=preemption)
            except BaseException:
                # the logs up to the stop, without hiding its reason
                with contextlib.suppress(Exception):
                    summaries.flush()
                raise
            finally:
                preemption.close()
            summaries.flush()
    finally:
        if not chief:
            shutil.rmtree(ckpt_dir, ignore_errors=True)
    return dict(
        step=int(saved.optimizer.iterations.numpy()),
        perplexity=progress.perplexity,
        direction_perplexity=progress.direction_perplexity,
        tokens_per_second=progress.tokens_per_second,
        seconds=time.perf_counter() - run_start,
        checkpoint=path if chief else None,
        options=options,
        model=saved.lm,
    )


def _run_steps(steps: _Steps, carried: CarriedStates, run: TrainingRun, *,
               progress: TrainingProgress, writer: CheckpointWriter,
               preemption) -> Optional[str]:
    """Runs the global steps after ``steps.start`` up to ``steps.last``.

    A progress line comes every ``run.log_every`` steps, a checkpoint
    every ``run.save_every`` and at the last. Returns the path of the last
    checkpoint written, None when no step ran.

    Raises:
        TrainingPreempted: a signal came. ``preemption.after_step`` wrote
            the checkpoint of the step reached.
    """
    path, last = None, steps.last
    for current in range(steps.start + 1, last + 1):
        loss, grad_norm, carried.current, direction_losses = (
            steps.train_step(next(steps.batches), carried.current))
        progress.add(loss, direction_losses)
        if current % run.log_every == 0 or current == last:
            progress.report(current, grad_norm)
        if current % run.save_every == 0 or current == last:
            path = writer.save(current)
        if current < last:  # the last step ends the run anyway
            preemption.after_step(current)
    return path
