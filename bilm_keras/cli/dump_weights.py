"""``bilm-keras dump-weights``: a checkpoint as bilm-tf HDF5 (bilm-tf's
``dump_weights.py``)."""

import os

from bilm_keras.cli._common import (
    CommandError,
    SaveDirJob,
    add_checkpoint_argument,
    add_overwrite_argument,
    check_output_file,
    detect_save_dir,
)
from bilm_keras.options import OPTIONS_FILE

NAME = "dump-weights"
ALIAS = "dump_weights.py"
HELP = "write a trained checkpoint as bilm-tf HDF5 weights + options.json"
DESCRIPTION = """\
Write the latest checkpoint in --save_dir as bilm-tf's HDF5 weights (no
softmax), with an options.json for prediction beside it (n_characters 262,
as bilm-tf and AllenNLP expect). Load both with BidirectionalLanguageModel,
`bilm-keras embed` or AllenNLP. A save_dir of bilm-tf's own training
gives the file bilm-tf's dump_weights.py wrote, bit for bit. A latest
checkpoint that does not read whole is refused (the newest that does is
named: pass it as --checkpoint). An existing --outfile, or options.json
beside it, is refused unless --overwrite is given."""
EPILOG = """\
examples:
  bilm-keras dump-weights --save_dir ckpt/ --outfile model/lm_weights.hdf5
  bilm-keras dump-weights --save_dir ckpt/ --checkpoint model-200 \\
      --outfile model/lm_weights.hdf5"""


def add_arguments(parser):
    parser.add_argument("--save_dir", required=True,
                        help="Location of checkpoint files")
    parser.add_argument("--outfile", required=True,
                        help="Output hdf5 file with weights")
    add_overwrite_argument(parser, "replace --outfile and the options.json "
                                   "beside it if they exist")
    add_checkpoint_argument(parser, "write")


def check(args) -> SaveDirJob:
    model = detect_save_dir(args.save_dir, args.checkpoint)
    check_output_file(args.outfile, "--outfile", args.overwrite)
    # written beside the weights; in --save_dir it is the training options
    options_file = os.path.join(
        os.path.dirname(os.path.abspath(args.outfile)), OPTIONS_FILE)
    if os.path.lexists(options_file) and not args.overwrite:
        raise CommandError(
            f"--outfile {args.outfile}: {options_file} exists (written "
            "beside the weights; pass --overwrite to replace it)")
    return SaveDirJob(args, model)


def run(job: SaveDirJob) -> dict:
    from bilm_keras.save_dirs import dump_weights

    args = job.args
    result = dump_weights(job.model, args.outfile)
    print(f"wrote {result['weight_file']} and {result['options_file']}")
    return result
