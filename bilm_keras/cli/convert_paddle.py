"""``bilm-keras convert-paddle``: a PaddlePaddle ELMo checkpoint (Fluid
persistables directory or PaddleNLP ``.pdparams``) as a bilm_keras model
(options.json + bilm-tf HDF5 weights + vocab.txt)."""

import os

from bilm_keras.cli._common import (
    CommandError, add_outdir_arguments, check_file)

NAME = "convert-paddle"
ALIAS = "convert_paddle.py"
HELP = "convert a PaddlePaddle ELMo checkpoint (Fluid directory or " \
       ".pdparams) to options.json + HDF5"
DESCRIPTION = """\
Convert a PaddlePaddle ELMo checkpoint into --outdir: options.json,
lm_weights.hdf5 (bilm-tf's layout) and vocab.txt. Two kinds are told
apart by what --checkpoint is:

  a directory  a Fluid save_persistables checkpoint of PaddlePaddle/models
               PaddleNLP/ELMO (the Chinese encyclopedia "baike" model):
               word input; its token table goes into lm_weights.hdf5
  a file       a PaddleNLP 2.x .pdparams (examples/language_model/elmo):
               character input as bilm-tf's

The baike checkpoint holds no vocabulary: pass --vocab_file (the released
model's is vocabulary_min5k.txt from PaddlePaddle/models, on its
release/1.8 branch in PaddleNLP/pretrain_language_models/ELMo/data/,
52,445 lines).
Everything is read without Paddle and checked before anything is
written; --outdir appears only when complete, and a non-empty one is
refused unless --overwrite is given.
docs/paddle.md says how the converted model differs from Paddle's own
elmo_encoder."""
EPILOG = """\
examples:
  bilm-keras convert-paddle --checkpoint baike_elmo_checkpoint \\
      --vocab_file vocabulary_min5k.txt --outdir baike-elmo
  bilm-keras convert-paddle --checkpoint elmo.pdparams \\
      --vocab_file vocab.txt --outdir my-elmo

then use the files as a bilm-tf model's:
  embed:  --options_file baike-elmo/options.json \\
          --weight_file baike-elmo/lm_weights.hdf5 \\
          --vocab_file baike-elmo/vocab.txt
  or:     --model baike-elmo --vocab_file baike-elmo/vocab.txt"""

# reading the checkpoint needs numpy and h5py, never TensorFlow
NEEDS_TENSORFLOW = False


def add_arguments(parser):
    parser.add_argument("--checkpoint", required=True,
                        help="a Fluid persistables directory or a "
                             ".pdparams file")
    parser.add_argument("--vocab_file", default=None,
                        help="the checkpoint's vocabulary (default: the "
                             "one it carries, if any)")
    add_outdir_arguments(parser,
                         "options.json, lm_weights.hdf5, vocab.txt")


def check(args) -> None:
    if not os.path.exists(args.checkpoint):
        raise CommandError(
            f"--checkpoint: {args.checkpoint}: expected a Fluid "
            "persistables directory or a .pdparams file, found no such "
            "file or directory")
    if args.vocab_file is not None:
        check_file(args.vocab_file, "--vocab_file")
    # the checkpoint's contents and --outdir are convert_paddle's to check
    # (file, field, expected, found), before it reads the weights


def run(args) -> dict:
    from bilm_keras.weights.paddle_conversion import convert_paddle

    result = convert_paddle(args.checkpoint, args.outdir,
                            vocab_file=args.vocab_file,
                            overwrite=args.overwrite)
    print(f"wrote {result['options_file']}, {result['weight_file']} and "
          f"{result['vocab_file']}")
    return result
