"""``bilm-keras embed``: every sentence of a text file to HDF5."""

from bilm_keras.cli._common import (
    CommandError,
    add_overwrite_argument,
    check_file,
    check_options,
    check_output_file,
    non_negative_int,
    positive_int,
)

NAME = "embed"
ALIAS = "dump_bilm_embeddings.py"
HELP = "embed every sentence of a text file with a biLM, to HDF5"
DESCRIPTION = """\
Embed every line of a text file (one whitespace-tokenized sentence per
line, UTF-8) with a biLM and write the vectors to an HDF5 file, as
AllenNLP's `allennlp elmo` does: one dataset per line, named by its 0-based
line number, and a dataset `sentence_to_index` (one JSON string: each
line's text -> its dataset's name). The file's attributes record the model
files, the output choice, the layers and the dtype.

What each dataset holds (D = 2 * projection_dim, 1024 for the published
model; L = LSTM layers):
  --all            every layer, (L + 1, n_tokens, D)       [default]
  --top            the top LSTM layer, (n_tokens, D)
  --average        the mean of the layers, (n_tokens, D)
  --sentence_mean  one vector per sentence: the mean of the layers over
                   the tokens too, (D,) -- TF-Hub ELMo's "default"
--layers chooses the layers kept (--all) or averaged (--average,
--sentence_mean); --float16 halves the file.

Sentences are embedded statelessly (a sentence's vectors do not depend on
the lines around it), length-sorted in chunks and written in file order;
the output file appears only when complete."""
EPILOG = """\
examples:
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile elmo.hdf5
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile elmo_mean.hdf5 \\
      --average --float16
  bilm-keras embed --options_file options.json --weight_file lm_weights.hdf5 \\
      --dataset_file sentences.txt --outfile elmo_sentences.hdf5 \\
      --layers 1 2 --sentence_mean

read it back (Python):
  f = h5py.File("elmo.hdf5"); index = json.loads(f["sentence_to_index"][0])
  vectors = f[index["The cat sat ."]][...]"""


def add_arguments(parser):
    parser.add_argument("--options_file", required=True,
                        help="the biLM's options.json")
    parser.add_argument("--weight_file", required=True,
                        help="the biLM's weights (bilm-tf HDF5)")
    parser.add_argument("--dataset_file", required=True,
                        help="input: one whitespace-tokenized sentence per "
                             "line, UTF-8")
    parser.add_argument("--outfile", required=True, help="output HDF5 file")
    add_overwrite_argument(parser)
    parser.add_argument("--vocab_file", default=None,
                        help="the model's vocabulary (optional for a "
                             "character model)")
    parser.add_argument("--batch_size", type=positive_int, default=None,
                        help="sentences per LSTM batch (default: the "
                             "embedder groups them by length into its "
                             "fastest batches)")
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
    parser.set_defaults(output="all")
    parser.add_argument("--layers", type=non_negative_int, nargs="+",
                        default=None, metavar="LAYER",
                        help="keep (--all) or average (--average, "
                             "--sentence_mean) only these layers, 0 = the "
                             "token layer (default: all)")
    parser.add_argument("--float16", action="store_true",
                        help="store float16 (half the size, about 3 "
                             "significant digits)")


def check(args) -> None:
    """Everything that needs no model: files, options, layers, input."""
    from bilm_keras.data.sentence_file import check_sentence_file
    from bilm_keras.embedding_outputs import embedding_layer_ids

    options = check_options(args.options_file, "--options_file")
    if options.char_cnn is None:
        raise CommandError(
            f"--options_file {args.options_file}: char_cnn: expected a "
            "character-input model (embed reads text), found none (a "
            "token-input model: use the Python API with "
            "use_character_inputs=False)")
    check_file(args.weight_file, "--weight_file")
    if args.vocab_file is not None:
        check_file(args.vocab_file, "--vocab_file")
    try:
        embedding_layer_ids(args.layers, options.lstm.n_layers, args.output)
    except ValueError as e:  # "layers: expected indices in 0..2, found [3]"
        raise CommandError(f"--{e}") from None
    check_sentence_file(args.dataset_file)
    check_output_file(args.outfile, "--outfile", args.overwrite)


def run(args) -> int:
    from bilm_keras.embedding_dump import dump_bilm_embeddings

    dtype = "float16" if args.float16 else "float32"
    n = dump_bilm_embeddings(
        args.vocab_file, args.dataset_file, args.options_file,
        args.weight_file, args.outfile, batch_size=args.batch_size,
        layers=args.layers, dtype=dtype, output=args.output)
    layers = "" if args.layers is None else f", layers {args.layers}"
    print(f"wrote {n} sentences to {args.outfile} ({args.output}{layers}, "
          f"{dtype})")
    return n


def before_tensorflow(args) -> None:
    """Fixes glibc's mmap threshold before TensorFlow allocates anything
    (:mod:`bilm_keras.memory`)."""
    from bilm_keras.memory import return_freed_memory_for_bulk_embedding

    return_freed_memory_for_bulk_embedding()
