"""``bilm-keras embed``: every sentence of a text file to HDF5."""

import argparse
import contextlib
import dataclasses
import os
import sys
from typing import Any, Optional

from bilm_keras.cli._common import (
    CommandError,
    add_overwrite_argument,
    add_precision_argument,
    check_file,
    check_output_file,
    finite_float,
    non_negative_int,
    positive_int,
    stderr_replayed_on_failure,
)
from bilm_keras.cli._model_flags import (
    add_model_argument,
    check_model_flags,
    resolve_model_flag,
)
from bilm_keras.embedding.shards import CHUNK_SIZE

NAME = "embed"
ALIAS = "dump_bilm_embeddings.py"
HELP = "embed every sentence of a text file with a biLM, to HDF5"
DESCRIPTION = """\
Embed every line of a text file (one whitespace-tokenized sentence per
line, UTF-8) with a biLM (a published one by name, --model, or your own
files, --options_file and --weight_file) and write the vectors to an HDF5
file, as
AllenNLP's `allennlp elmo` does: one dataset per line, named by its 0-based
line number, and a dataset `sentence_to_index` (one JSON string: each
line's text -> its dataset's name). The file's attributes record the model
files, the output choice, the layers and the dtype.

What each dataset holds (D = 2 * projection_dim, 1024 for the published
model; L = LSTM layers):
  --all            every layer, (L + 1, n_tokens, D)       [default]
  --top            the top LSTM layer, (n_tokens, D)
  --average        the mean of the layers, (n_tokens, D)
  --mix S0 S1 S2   a task's mix gamma * sum_j s_j h_j, (n_tokens, D): the
                   normalised s_j, used as given (--gamma G, default 1);
                   a third of --all for the published model
  --mix_logits W0 W1 W2
                   the same from a trained ScalarMix / weight_layers' raw
                   weights w: s = softmax(w + 1/(L + 1))
  --mix            the model's own learned mix (mix.json beside its
                   weights: a converted TF1 Hub module's)
  --sentence_mean  one vector per sentence: the mean of the layers over
                   the tokens too, (D,) -- TF-Hub ELMo's "default"
--layers chooses the layers kept (--all), averaged (--average,
--sentence_mean) or mixed (--mix: one weight per layer chosen);
--alignment FILE... maps each layer h to h @ W.T first (a cross-lingual
alignment: 'published' takes an xling-* model's own matrix). --float16
halves the file. --use_sentence_keys names each dataset by its
line's text instead (AllenNLP's --use-sentence-keys; no sentence_to_index
then; every line distinct, non-blank, without '/').

A token-input run (bilm-tf's usage_token.py) takes --vocab_file and
--embedding_weight_file (the token table `bilm-keras dump-tokens` wrote
for that vocabulary): the same vectors, without the char-CNN. A model
trained on tokens (options without char_cnn) reads its table from
--weight_file.

Sentences are embedded statelessly (a sentence's vectors do not depend on
the lines around it), length-sorted in chunks and written in file order;
the output file appears only when complete. Until then the run keeps its
progress in OUTFILE.partial/ (one part per chunk): a killed run
continues with the same command plus --resume. --shard K/N embeds one
contiguous share of the lines (N processes or machines, then
`bilm-keras merge-embeddings`); --devices picks the devices (default:
every GPU, else the CPU).

--runner RUNNER runs the same job as an Apache Beam pipeline (the `beam`
extra: pip install 'bilm_keras[beam]'): DirectRunner on this machine, or
DataflowRunner, FlinkRunner, SparkRunner, ... with Beam's own flags after
embed's (--direct_num_workers 2, --project P, --temp_location gs://...).
The output is the same file; --dataset_file may be a glob on any Beam file
system (its files' lines numbered on in path order). docs/beam.md has
the details."""
EPILOG = """\
examples:
  bilm-keras embed --model elmo-original --dataset_file sentences.txt \\
      --outfile elmo.hdf5
  bilm-keras embed --model manylangs-zh --dataset_file zh.txt \\
      --outfile elmo_zh.hdf5 --average
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile elmo.hdf5
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile elmo_mean.hdf5 \\
      --average --float16
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile elmo_sentences.hdf5 \\
      --layers 1 2 --sentence_mean
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile elmo_task_mix.hdf5 \\
      --mix 0.2 0.5 0.3 --gamma 0.8
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile elmo_tokens.hdf5 \\
      --vocab_file vocab.txt --embedding_weight_file elmo_token_embeddings.hdf5
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile elmo.hdf5 --resume
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile part-3.hdf5 --shard 3/8
(then, with every shard written: `bilm-keras merge-embeddings --outfile
elmo.hdf5 part-*.hdf5`)
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file 'corpus/*.txt' --outfile elmo.hdf5 \\
      --runner DirectRunner --direct_num_workers 2 \\
      --direct_running_mode multi_processing

read it back (Python):
  f = h5py.File("elmo.hdf5"); index = json.loads(f["sentence_to_index"][0])
  vectors = f[index["The cat sat ."]][...]"""


def add_arguments(parser):
    _add_input_flags(parser)
    _add_output_flags(parser)
    _add_run_flags(parser)


def _add_input_flags(parser):
    """The model, the text and the output file."""
    add_model_argument(parser, what="--options_file and --weight_file")
    parser.add_argument("--options_file",
                        help="the biLM's options.json")
    parser.add_argument("--weight_file",
                        help="the biLM's weights (bilm-tf HDF5)")
    parser.add_argument("--dataset_file", required=True,
                        help="input: one whitespace-tokenized sentence per "
                             "line, UTF-8")
    parser.add_argument("--outfile", required=True, help="output HDF5 file")
    add_overwrite_argument(parser)
    parser.add_argument("--vocab_file", default=None,
                        help="the model's vocabulary (optional for a "
                             "character model; with --model, token input "
                             "defaults to the model's own)")
    parser.add_argument("--embedding_weight_file", default=None,
                        help="token input: the token table of --vocab_file "
                             "(bilm-keras dump-tokens)")


def _add_output_flags(parser):
    """What is written for each sentence (the ``--all`` ... group, the mix,
    the layers kept, the names and the dtype)."""
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--all", dest="output", action="store_const",
                        const="all", help="every layer (the default)")
    output.add_argument("--top", dest="output", action="store_const",
                        const="top", help="the top LSTM layer only")
    output.add_argument("--average", dest="output", action="store_const",
                        const="average", help="the mean of the layers")
    output.add_argument("--sentence_mean", dest="output",
                        action="store_const", const="sentence_mean",
                        help="one vector per sentence: the mean of the "
                             "layers over its tokens")
    output.add_argument("--mix", dest="mix_weights", type=finite_float,
                        nargs="*", metavar="S",
                        help="a task's mix of the layers: the normalised "
                             "s_j, one per layer, used as given; with no "
                             "S, the model's learned mix (mix.json beside "
                             "its weights: a converted TF1 Hub module's)")
    output.add_argument("--mix_logits", type=finite_float, nargs="+",
                        metavar="W",
                        help="the mix from a trained ScalarMix's raw "
                             "weights (softmax applied)")
    parser.add_argument("--gamma", type=finite_float, default=None,
                        help="the mix's scale (--mix, --mix_logits; "
                             "default 1)")
    parser.add_argument("--use_sentence_keys", "--use-sentence-keys",
                        action="store_true",
                        help="name datasets by their sentence, not their "
                             "line number")
    parser.add_argument("--layers", type=non_negative_int, nargs="+",
                        default=None, metavar="LAYER",
                        help="keep (--all), average (--average, "
                             "--sentence_mean) or mix (--mix) only these "
                             "layers, 0 = the token layer (default: all)")
    parser.add_argument("--float16", action="store_true",
                        help="store float16 (half the size, about 3 "
                             "significant digits)")
    # dest: what the flag names (files or 'published') is resolved into
    # DumpSettings.alignment's files, a different value
    parser.add_argument("--alignment", nargs="+", default=None,
                        dest="alignment_spec", metavar="FILE",
                        help="map the layers before they are reduced with "
                             "cross-lingual alignment matrices (torch.save "
                             "of a numpy array, h @ W.T): one file for "
                             "every layer, one per layer, or 'published' "
                             "for an xling-* model's own")


def _add_run_flags(parser):
    """How the run goes: batches, precision, chunks, resuming, shards,
    devices, Beam."""
    parser.add_argument("--batch_size", type=positive_int, default=None,
                        help="sentences per LSTM batch (default: the "
                             "embedder groups them by length into its "
                             "fastest batches)")
    add_precision_argument(
        parser, training=False, computes="the biLM's products",
        note="bfloat16 ran 2.4-3.0x float32's speed on a 2-vCPU AMX Xeon; "
             "per-token cosine to float32's vectors: median >= 0.9999, "
             "worst 0.9994 on the models measured")
    parser.add_argument("--chunk_size", type=positive_int,
                        default=CHUNK_SIZE,
                        help="sentences read, length-sorted and embedded "
                             "together; the run's progress is kept one "
                             "chunk at a time")
    parser.add_argument("--resume", action="store_true",
                        help="continue a killed run of this command from "
                             "OUTFILE.partial/ (with nothing to continue: "
                             "say so and start from the first line)")
    parser.add_argument("--shard", type=shard_arg, default=None,
                        metavar="K/N",
                        help="embed only shard K of N (0 <= K < N): a "
                             "contiguous share of the --chunk_size chunks, "
                             "datasets named by their line in the whole "
                             "file")
    parser.add_argument("--devices", type=devices_arg, default=None,
                        metavar="DEVICES",
                        help="comma-separated devices to embed on, e.g. "
                             "GPU:0,GPU:1, or 'all' (default: every GPU, "
                             "else the CPU)")
    parser.add_argument("--runner", default=None, metavar="RUNNER",
                        help="run as an Apache Beam pipeline on this "
                             "runner (DirectRunner, DataflowRunner, "
                             "FlinkRunner, SparkRunner, ...); Beam's own "
                             "flags follow embed's (needs the beam extra)")
    parser.set_defaults(beam_flags=[])


def NEEDS_TENSORFLOW(args) -> bool:  # noqa: N802 (the cli's name)
    """With ``--runner`` the workers load the model, not this process."""
    return args.runner is None


def take_unknown_arguments(args, unknown) -> bool:
    """With ``--runner``, the flags embed does not know are Beam's
    (checked with Beam's options in :func:`check`)."""
    if args.runner is None:
        return False
    args.beam_flags = list(unknown)
    return True


def shard_arg(text: str):
    """An argparse ``type``: ``K/N`` with ``0 <= K < N``."""
    from bilm_keras.embedding.shards import parse_shard

    try:
        return parse_shard(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def devices_arg(text: str):
    """An argparse ``type``: ``all`` or a comma-separated device list."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(
            f"expected 'all' or devices such as GPU:0,GPU:1, found {text!r}")
    return None if names == ["all"] else names


#: the flag of each field a library error may name (others: ``--FIELD``)
FLAGS = {"mix_weights": "--mix", "dtype": "--float16"}


def check_flags(args, parser) -> None:
    """``--model``, or ``--options_file`` and ``--weight_file``."""
    check_model_flags(args, parser)


@dataclasses.dataclass(frozen=True)
class EmbedJob:
    """What ``bilm-keras embed`` runs, checked by :func:`check`.

    It holds the files, with ``--model``'s resolved into the cache, what to
    embed and how. :func:`run` executes it. Nothing changes ``args``."""

    #: the model's files and the input, the output
    options_file: str
    weight_file: str
    vocab_file: Optional[str]
    dataset_file: str
    outfile: str
    #: what to embed (:class:`~bilm_keras.embedding.outputs.EmbeddingSpec`)
    spec: Any
    #: how (:class:`~bilm_keras.embedding.dump_plan.DumpSettings`)
    settings: Any
    #: ``--runner``'s: its name, Beam's options, the checked plan and
    #: ``--model``'s SPEC for its workers (None without ``--runner``)
    runner: Optional[str] = None
    pipeline_options: Any = None
    beam_plan: Any = None
    model: Optional[str] = None
    verbose: bool = False

    def summary(self) -> str:
        """What was written, for the closing line."""
        layers = ("" if self.spec.layers is None
                  else f", layers {list(self.spec.layers)}")
        return f"{self.spec.output}{layers}, {self.spec.dtype}"


def embedding_spec(args, learned_mix=None):
    """The :class:`~bilm_keras.embedding.outputs.EmbeddingSpec` the flags
    describe.

    ``--mix``/``--mix_logits`` imply the output ``mix``. A bare ``--mix``
    is ``learned_mix``, the model's own."""
    from bilm_keras.embedding.outputs import EmbeddingSpec

    mixed = args.mix_weights is not None or args.mix_logits is not None
    fields = dict(mix_weights=args.mix_weights, mix_logits=args.mix_logits,
                  gamma=args.gamma)
    if learned_mix is not None:
        fields = dict(mix_logits=learned_mix.mix_logits,
                      gamma=learned_mix.gamma)
    given = dict(
        output="mix" if mixed else args.output, layers=args.layers,
        dtype="float16" if args.float16 else None, **fields)
    # a flag not given: the field's default
    return EmbeddingSpec(**{name: value for name, value in given.items()
                            if value is not None})


def _bare_mix(args) -> bool:
    """``--mix`` without weights: the model's learned mix is asked for."""
    if args.mix_weights != []:
        return False
    if args.gamma is not None:
        raise CommandError("--gamma: not with a bare --mix (the model's "
                           "learned mix has its own gamma)")
    return True


def _learned_spec(args, weight_file: str):
    """The spec of a bare ``--mix``: the ``mix.json`` beside the weights,
    as ``from_pretrained(...).embed_sentences(output="mix")`` uses it."""
    from bilm_keras.weights.learned_mix import MIX_FILE, mix_beside

    folder = os.path.dirname(os.path.abspath(weight_file))
    learned = mix_beside(folder)
    if learned is None:
        raise CommandError(
            f"--mix: expected weights S0 S1 ..., or a model with a learned "
            f"mix ({MIX_FILE} beside its weights, as a converted TF1 Hub "
            f"module has), found neither in {folder}")
    return embedding_spec(args, learned)


def _alignment_settings(args, settings, weight_file: str, options_file):
    """``settings`` with ``--alignment``'s files, checked against the
    model (their shape) before anything is embedded."""
    if args.alignment_spec is None:
        return settings
    from bilm_keras.options import BiLMOptions
    from bilm_keras.weights.alignment import (
        AlignmentError, alignment_files, read_alignment)

    spec = ("published" if args.alignment_spec == ["published"]
            else args.alignment_spec)
    folder = os.path.dirname(os.path.abspath(weight_file))
    options = BiLMOptions.from_json(options_file)
    try:
        files = alignment_files(spec, folder, args.model or weight_file)
        read_alignment(files, n_layers=options.lstm.n_layers + 1,
                       dim=2 * options.lstm.projection_dim)
    except AlignmentError as e:
        raise CommandError(f"--{e}") from None
    return dataclasses.replace(settings, alignment=tuple(files))


def dump_settings(args):
    """The :class:`~bilm_keras.embedding.dump_plan.DumpSettings` the flags
    describe (a progress bar unless ``--runner``)."""
    from bilm_keras.embedding.dump_plan import DumpSettings

    return DumpSettings(
        batch_size=args.batch_size, chunk_size=args.chunk_size,
        embedding_weight_file=args.embedding_weight_file,
        use_sentence_keys=args.use_sentence_keys, shard=args.shard,
        resume=args.resume, devices=args.devices,
        progress=args.runner is None, precision=args.precision)


def check(args) -> EmbedJob:
    """Checks everything that needs no TensorFlow, each once.

    First come the settings, the files, the output file and a killed
    run's progress. Then come ``--model``'s files, fetched into the cache
    only once those cheap checks pass. Then come the options, the spec
    against them, the input and the token table, checked by
    :func:`~bilm_keras.embedding.dump_plan.plan_dump` as the library
    does. Returns the job :func:`run` executes."""
    if args.runner is not None:
        # the Beam flags first: --resume and --shard are refused there
        return _check_beam(args)
    bare_mix = _bare_mix(args)
    spec = None if bare_mix else embedding_spec(args)
    settings = dump_settings(args)
    _check_local_inputs(args)
    options_file, weight_file, vocab_file = _model_files(args)
    if bare_mix:
        spec = _learned_spec(args, weight_file)
    settings = _alignment_settings(args, settings, weight_file, options_file)
    plan = _plan(args, spec, settings, options_file, weight_file, vocab_file)
    if plan.embedding_weight_file is not None:
        _check_token_table(plan, vocab_file, args.embedding_weight_file)
    return EmbedJob(options_file=options_file, weight_file=weight_file,
                    vocab_file=vocab_file, dataset_file=args.dataset_file,
                    outfile=args.outfile, spec=spec, settings=settings,
                    verbose=args.verbose)


def _check_local_inputs(args) -> None:
    """Checks the files given by flag and the output before any download.

    With ``--resume`` it checks the killed run's progress too. The input
    is read whole by :func:`_plan`. With ``--model`` its presence is
    checked here, before the download."""
    from bilm_keras.embedding.runs import check_leftover, partial_dir

    if args.model is not None:
        check_file(args.dataset_file, "--dataset_file")
    for flag in ("options_file", "weight_file", "vocab_file",
                 "embedding_weight_file"):
        if getattr(args, flag) is not None:
            check_file(getattr(args, flag), f"--{flag}")
    if not (args.resume and os.path.isdir(partial_dir(args.outfile))):
        # (a resumed run killed after its rename finds its output there)
        check_output_file(args.outfile, "--outfile", args.overwrite)
    check_leftover(args.outfile, args.resume)  # a killed run's progress


def _plan(args, spec, settings, options_file, weight_file, vocab_file):
    from bilm_keras.embedding.dump_plan import plan_dump

    return plan_dump(
        options_file=options_file, weight_file=weight_file,
        vocab_file=vocab_file, dataset_file=args.dataset_file, spec=spec,
        settings=settings)


def _model_files(args) -> tuple:
    """``(options_file, weight_file, vocab_file)``: the flags', or
    ``--model``'s, fetched into the cache if needed. For token input the
    vocabulary is ``--model``'s unless ``--vocab_file`` is given."""
    if args.model is None:
        return args.options_file, args.weight_file, args.vocab_file
    from bilm_keras.pretrained import check_before_download

    check_before_download(
        args.model, vocab_given=args.vocab_file is not None,
        vocab_flag="--vocab_file",
        token_input=args.embedding_weight_file is not None)
    model = resolve_model_flag(args.model, "--model")
    vocab_file = args.vocab_file
    token_input = (args.embedding_weight_file is not None
                   or not model.options.use_character_inputs)
    if vocab_file is None and token_input:
        vocab_file = model.vocab_file
    return model.options_file, model.weight_file, vocab_file


def _check_beam(args) -> EmbedJob:
    """Checks ``--runner``: Beam is there and the flags fit a pipeline.

    The runner and Beam's flags must be Beam's. Then come the same checks
    as without it, with the input read where it lies, e.g. a glob or
    another file system."""
    if args.alignment_spec is not None:
        raise CommandError("--alignment: not with --runner (its workers "
                           "map no layers)")
    for flag, value in (("--resume", args.resume),
                        ("--shard", args.shard is not None)):
        if value:
            raise CommandError(
                f"{flag}: not with --runner (the runner retries failed "
                f"work and splits the input itself)")
    if args.model is not None and args.runner not in LOCAL_RUNNERS:
        raise CommandError(
            f"--model: not with --runner {args.runner} (its workers "
            "cannot read this machine's model cache); give "
            "--options_file and --weight_file on a file system the "
            "workers reach")
    try:
        with _quiet_stderr(args.verbose):  # Beam's import warnings
            from bilm_keras.embedding import beam_dump, beam_files
    except ImportError as e:
        raise CommandError(
            f"--runner: needs Apache Beam ({e}); install it with pip "
            f"install 'bilm_keras[beam]' (or pip install apache-beam)"
        ) from None
    bare_mix = _bare_mix(args)
    spec = None if bare_mix else embedding_spec(args)
    settings = dump_settings(args)
    pipeline_options = beam_dump.pipeline_options(args.runner,
                                                  args.beam_flags)
    for flag in ("options_file", "weight_file", "vocab_file",
                 "embedding_weight_file"):
        path = getattr(args, flag)
        if path is not None and beam_files.is_local(path):
            check_file(path, f"--{flag}")
    if beam_files.is_local(args.outfile):
        check_output_file(args.outfile, "--outfile", args.overwrite)
    elif beam_files.exists(args.outfile) and not args.overwrite:
        raise CommandError(f"--outfile {args.outfile}: file exists (pass "
                           f"--overwrite to replace it)")
    # the files of this machine's cache
    options_file, weight_file, vocab_file = _model_files(args)
    if bare_mix:
        spec = _learned_spec(args, weight_file)
    plan = beam_dump.plan_beam_dump(
        options_file=options_file, weight_file=weight_file,
        vocab_file=vocab_file, dataset_file=args.dataset_file, spec=spec,
        settings=settings)
    if plan.plan.embedding_weight_file is not None and all(
            beam_files.is_local(path) for path in (
                plan.plan.embedding_weight_file, vocab_file)):
        _check_token_table(plan.plan, vocab_file,
                           args.embedding_weight_file)
    return EmbedJob(options_file=options_file, weight_file=weight_file,
                    vocab_file=vocab_file, dataset_file=args.dataset_file,
                    outfile=args.outfile, spec=spec, settings=settings,
                    runner=args.runner, pipeline_options=pipeline_options,
                    beam_plan=plan, model=args.model, verbose=args.verbose)


def _check_token_table(plan, vocab_file, embedding_weight_file) -> None:
    """Token input: the token table has one row per line of the vocabulary
    and projection_dim columns (the library would find out only after
    loading the model)."""
    import h5py

    from bilm_keras.data.batcher import TokenBatcher

    flag = "--embedding_weight_file"
    if embedding_weight_file is None:  # a token-input model
        flag = "--weight_file"
    table = plan.embedding_weight_file
    size = TokenBatcher(vocab_file).vocabulary_size
    try:
        with h5py.File(table, "r") as f:
            shape = getattr(f.get("embedding"), "shape", None)
    except OSError as e:
        raise CommandError(f"{flag} {table}: expected an HDF5 token table, "
                           f"found {e}") from None
    expected = (size, plan.options.lstm.projection_dim)
    if shape != expected:
        raise CommandError(
            f"{flag} {table}: dataset 'embedding' has shape {shape}, "
            f"expected {expected} (one row per line of --vocab_file "
            f"{vocab_file}, projection_dim columns)")


def run(job: EmbedJob) -> int:
    """Executes the checked job with the library's dump or its Beam
    pipeline, and prints what was written."""
    if job.runner is not None:
        return _run_beam(job)
    from bilm_keras.embedding.dump import dump_bilm_embeddings

    _warn_of_long_tokens(job)
    n = dump_bilm_embeddings(
        job.vocab_file, job.dataset_file, job.options_file,
        job.weight_file, job.outfile, job.spec, job.settings)
    shard = job.settings.shard
    shard = "" if shard is None else f", shard {shard[0]}/{shard[1]}"
    print(f"wrote {n} sentences to {job.outfile} ({job.summary()}{shard})")
    return n


def _warn_of_long_tokens(job: EmbedJob) -> None:
    """One ``WARNING:`` line on stderr when the input's first lines hold a
    token far longer than a word of the model's: unsegmented text
    (:mod:`bilm_keras.data.long_tokens`). A token model given as
    ``--embedding_weight_file`` (a table made for the input's own words)
    is not checked."""
    from bilm_keras.data.long_tokens import long_token_warning_for_file

    warning = None if job.settings.embedding_weight_file else \
        long_token_warning_for_file(job.dataset_file, job.options_file,
                                    job.vocab_file)
    if warning:
        print(f"WARNING: {warning}", file=sys.stderr, flush=True)


def before_tensorflow(args) -> None:
    """Fixes glibc's mmap threshold before TensorFlow allocates anything
    (:mod:`bilm_keras.embedding.memory`)."""
    from bilm_keras.embedding import memory

    memory.return_freed_memory_for_bulk_embedding()


def _run_beam(job: EmbedJob) -> int:
    from bilm_keras.embedding.beam_dump import dump_bilm_embeddings_with_beam

    if not job.verbose:  # Beam's relayed worker lines
        import logging

        logging.getLogger("apache_beam").setLevel(logging.ERROR)
    # local workers inherit stderr: their start-up lines are hidden too
    with _quiet_stderr(job.verbose or job.runner not in LOCAL_RUNNERS):
        n = dump_bilm_embeddings_with_beam(
            job.vocab_file, job.dataset_file, job.options_file,
            job.weight_file, job.outfile,
            pipeline_options=job.pipeline_options, spec=job.spec,
            settings=job.settings, model=job.model, plan=job.beam_plan)
    files = job.beam_plan.n_files
    print(f"wrote {n} sentences to {job.outfile} ({job.summary()}; "
          f"{job.runner}, {files} input file{'s' * (files != 1)})")
    return n


#: runners whose workers are processes of this machine, writing to its
#: stderr (their lines are hidden unless --verbose)
LOCAL_RUNNERS = ("DirectRunner", "SwitchingDirectRunner",
                 "BundleBasedDirectRunner", "FnApiRunner", "PrismRunner")


@contextlib.contextmanager
def _quiet_stderr(show: bool):
    """Points the stderr descriptor at a temporary file (unless ``show``):
    Beam warns on import, its local workers (child processes) log their
    start, TensorFlow's C++ libraries print theirs. Replayed if what runs
    fails unexpectedly (a bad input's error is its own one line)."""
    if show:
        yield
        return
    with stderr_replayed_on_failure(expected=(ValueError, OSError)):
        yield
