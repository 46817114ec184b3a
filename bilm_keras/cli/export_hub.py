"""``bilm-keras export-hub``: a TF-Hub-style SavedModel."""

import dataclasses
import os

from bilm_keras.cli._common import (
    CommandError,
    add_checkpoint_argument,
    add_precision_argument,
    check_file,
    check_options,
    detect_save_dir,
)
from bilm_keras.cli._model_flags import (
    ModelJob,
    add_model_argument,
    model_job,
    resolve_model_flag,
)

NAME = "export-hub"
ALIAS = "export_hub.py"
HELP = "export a biLM as a TF-Hub-style SavedModel (google/elmo/3's " \
       "signatures)"
DESCRIPTION = """\
Export a biLM as a SavedModel with google/elmo/3's interface (signatures
"default", "tokens" and "elmo"; outputs word_emb, lstm_outputs1,
lstm_outputs2, elmo, default, sequence_len), for hub.load, hub.KerasLayer
and bilm_keras.export.ELMoHubLayer. From a published model by name
(--model), from HDF5 files (--options_file and --weight_file) or from a
training directory (--save_dir: ours or bilm-tf's; a latest checkpoint
that does not read whole is refused, the newest that does named: pass it
as --checkpoint).

The scalar-mix weights are trainable; --trainable_lm makes every LM weight
trainable too. A non-empty --outdir is refused unless --overwrite is given
(it is then replaced once the new export is complete)."""
EPILOG = """\
examples:
  bilm-keras export-hub --options_file model/options.json \\
      --weight_file model/lm_weights.hdf5 --vocab_file model/vocab.txt \\
      --outdir elmo_savedmodel
  bilm-keras export-hub --save_dir ckpt/ --outdir elmo_savedmodel
  bilm-keras export-hub --model manylangs-zh --outdir elmo_zh_savedmodel"""


def add_arguments(parser):
    add_model_argument(parser, what="--options_file/--weight_file or "
                                    "--save_dir")
    parser.add_argument("--options_file", help="Options json file")
    parser.add_argument("--weight_file", help="Weight hdf5 file")
    parser.add_argument("--save_dir",
                        help="Training checkpoint directory (instead of "
                             "--options_file/--weight_file)")
    parser.add_argument("--outdir", required=True,
                        help="SavedModel directory to write")
    parser.add_argument("--vocab_file",
                        help="Vocabulary shipped as an asset (optional; "
                             "with --model, the model's own where it ships "
                             "one)")
    parser.add_argument("--trainable_lm", action="store_true",
                        help="Make the LM weights trainable too")
    parser.add_argument("--overwrite", action="store_true",
                        help="Replace a non-empty --outdir")
    add_precision_argument(
        parser, training=False, computes="the saved graph's products",
        note="the signatures take and return float32 either way")
    add_checkpoint_argument(parser, "export")


def check_flags(args, parser) -> None:
    """Flag combinations (usage errors): one source of weights."""
    hdf5 = args.options_file is not None or args.weight_file is not None
    sources = [flag for flag, given in [
        ("--model", args.model is not None),
        ("--save_dir", args.save_dir is not None),
        ("--options_file and --weight_file", hdf5)] if given]
    if len(sources) > 1:
        parser.error(f"give either {' or '.join(sources)}, not both")
    if args.model is None and args.save_dir is None and (
            args.options_file is None or args.weight_file is None):
        parser.error("--options_file and --weight_file are both required "
                     "(or give --model or --save_dir)")
    if args.checkpoint is not None and args.save_dir is None:
        parser.error("--checkpoint names a checkpoint of --save_dir; give "
                     "--save_dir")


def check(args) -> ModelJob:
    # the cheap checks first: no download for an export that would fail
    if args.vocab_file is not None:
        check_file(args.vocab_file, "--vocab_file")
    _check_outdir(args.outdir, args.overwrite)
    job = model_job(args, None if args.model is None else _model(args))
    if args.save_dir is not None:
        return dataclasses.replace(
            job, save_dir_model=detect_save_dir(args.save_dir,
                                                args.checkpoint))
    check_options(job.options_file, "--options_file")
    check_file(job.weight_file, "--weight_file")
    return job


def _model(args):
    """``--model``'s files, fetched, once the registry's row says the
    model can be exported with the flags given."""
    from bilm_keras.pretrained import check_before_download

    check_before_download(args.model, vocab_given=args.vocab_file is not None,
                          vocab_flag="--vocab_file")
    return resolve_model_flag(args.model, "--model")


def _check_outdir(outdir: str, overwrite: bool) -> None:
    """What export_hub checks of ``--outdir`` (it checks again), before
    TensorFlow and a model's download."""
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise CommandError(f"--outdir {outdir}: exists and is not a "
                           "directory")
    if os.path.isdir(outdir) and os.listdir(outdir) and not overwrite:
        raise CommandError(f"--outdir {outdir}: export directory exists "
                           "and is not empty (pass --overwrite to replace "
                           "it)")


def run(job: ModelJob) -> str:
    from bilm_keras.export.saved_model_export import (
        export_hub,
        export_hub_from_save_dir,
    )

    args = job.args
    common = dict(outdir=args.outdir, vocab_file=job.vocab_file,
                  trainable_lm=args.trainable_lm, overwrite=args.overwrite,
                  precision=args.precision)
    if args.save_dir is not None:
        outdir = export_hub_from_save_dir(save_dir=job.save_dir_model,
                                          **common)
    else:
        outdir = export_hub(options_file=job.options_file,
                            weight_file=job.weight_file, **common)
    print(f"wrote {outdir}")
    return outdir
