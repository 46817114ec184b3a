"""``bilm-keras convert-manylangs``: an ELMoForManyLangs model directory as
a bilm_keras model (options.json + bilm-tf HDF5 weights)."""

from bilm_keras.cli._common import add_outdir_arguments, check_dir

NAME = "convert-manylangs"
ALIAS = "convert_manylangs.py"
HELP = "convert an ELMoForManyLangs (PyTorch) model directory to " \
       "options.json + HDF5"
DESCRIPTION = """\
Convert a model directory released by HIT-SCIR/ELMoForManyLangs (the ELMo
models for 44 languages: config.json, char.dic, word.dic,
token_embedder.pkl, encoder.pkl) into --outdir: options.json,
lm_weights.hdf5 (bilm-tf's layout) and the two dictionaries, which
options.json names relative to itself. Pass the two files anywhere a
bilm-tf model goes (BidirectionalLanguageModel, `bilm-keras embed`,
`export-hub`, `train --init_weights`).

The model config is found as upstream finds it: config.json's config_path
as given, its file name inside --model_dir, then the two configs upstream
ships. The .pkl files are read without PyTorch, by an unpickler that
rebuilds tensors only: a model file can hold tensors, never code.
Everything is checked before anything is written; --outdir appears only
when complete, and a non-empty one is refused unless --overwrite is
given."""
EPILOG = """\
examples:
  bilm-keras convert-manylangs --model_dir zhs.model --outdir zhs-elmo
  bilm-keras convert-manylangs --model_dir zhs.model --outdir zhs-elmo \\
      --overwrite

then use the two files as a bilm-tf model's:
  embed:  --options_file zhs-elmo/options.json \\
          --weight_file zhs-elmo/lm_weights.hdf5
  train:  --options zhs-elmo/options.json \\
          --init_weights zhs-elmo/lm_weights.hdf5"""

# reading the .pkl files needs numpy and h5py, never TensorFlow
NEEDS_TENSORFLOW = False


def add_arguments(parser):
    parser.add_argument("--model_dir", required=True,
                        help="ELMoForManyLangs model directory (with "
                             "config.json and the .pkl files)")
    add_outdir_arguments(parser,
                         "options.json, lm_weights.hdf5, char.dic, word.dic")


def check(args) -> None:
    check_dir(args.model_dir, "--model_dir")
    # the directory's contents and --outdir are convert_manylangs' to
    # check (file, field, expected, found), before it reads the .pkl files


def run(args) -> dict:
    from bilm_keras.weights.manylangs_conversion import convert_manylangs

    result = convert_manylangs(args.model_dir, args.outdir,
                               overwrite=args.overwrite)
    print(f"wrote {result['options_file']} and {result['weight_file']}")
    return result
