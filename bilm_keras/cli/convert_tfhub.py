"""``bilm-keras convert-tfhub``: a TF1 Hub module of ELMo (Google's
``google/elmo``, DeepPavlov's) as a bilm_keras model (options.json,
bilm-tf HDF5 weights and the module's learned mix)."""

import contextlib
import os

from bilm_keras.cli._common import add_outdir_arguments, check_file

NAME = "convert-tfhub"
ALIAS = "convert_tfhub.py"
HELP = "convert a TF1 Hub module of ELMo to options.json + HDF5 + mix.json"
DESCRIPTION = """\
Convert a TF1 Hub module of ELMo (a folder or a tarball: tfhub_module.pb,
saved_model.pb, variables/), as Google's google/elmo modules and
DeepPavlov's are published, into --outdir: options.json, lm_weights.hdf5
(bilm-tf's layout) and mix.json, the module's learned layer mix, which
`output="mix"` uses when given no mix of its own.

The options come from the variables' shapes and from the graph's
constants (clips, skip connections), read as a protocol buffer: the graph
is never run. A graph that does not say them needs --options_file.
Everything is checked before anything is written; --outdir appears only
when complete, and a non-empty one is refused unless --overwrite is
given."""
EPILOG = """\
examples:
  bilm-keras convert-tfhub --module elmo_3.tar.gz --outdir elmo-3
  bilm-keras convert-tfhub --module elmo_3/ --options_file options.json \\
      --outdir elmo-3 --overwrite

then use the folder as a model:
  embed:  --model elmo-3
  Python: BidirectionalLanguageModel.from_pretrained("elmo-3")"""


def add_arguments(parser):
    parser.add_argument("--module", required=True,
                        help="TF1 Hub module folder or tarball")
    parser.add_argument("--options_file", default=None,
                        help="bilm-tf options.json of the model, for what "
                             "the module's graph does not say")
    add_outdir_arguments(parser, "options.json, lm_weights.hdf5, mix.json")


def check(args) -> None:
    if args.options_file is not None:
        check_file(args.options_file, "--options_file")
    # the module itself is convert_tfhub's to check (file, variable,
    # expected, found), before it reads any tensor


def run(args) -> dict:
    from bilm_keras._utils.atomic_files import check_output_directory
    from bilm_keras.weights.tfhub_conversion import convert_tfhub

    module = args.module
    with contextlib.ExitStack() as stack:
        if os.path.isfile(module):  # a tarball, as tfhub.dev serves one
            from bilm_keras.pretrained.archives import extracted_model
            from bilm_keras.weights.model_detection import TFHUB_TF1

            # the output is refused before the archive is unpacked
            check_output_directory(args.outdir, args.overwrite)
            module = stack.enter_context(
                extracted_model(module, family=TFHUB_TF1))
        result = convert_tfhub(module, args.outdir,
                               options_file=args.options_file,
                               overwrite=args.overwrite)
    written = [result["options_file"], result["weight_file"]]
    if result["mix_file"]:
        written.append(result["mix_file"])
    print(f"wrote {', '.join(written)}")
    return result
