"""``bilm-keras dump-tokens``: the char-CNN embedding of every vocabulary
token, for a token-input biLM."""

from bilm_keras.cli._common import (
    add_overwrite_argument,
    check_file,
    check_options,
    check_output_file,
)

NAME = "dump-tokens"
ALIAS = "dump_token_embeddings.py"
HELP = "embed every vocabulary token with the char-CNN (bilm-tf's " \
       "dump_token_embeddings)"
DESCRIPTION = """\
Write the character-CNN embedding of every token of a vocabulary to HDF5
(dataset "embedding", (n_tokens_vocab, projection_dim)), as bilm-tf's
dump_token_embeddings. The file is the embedding_weight_file of a biLM run
from token ids (BidirectionalLanguageModel(..., use_character_inputs=False)),
which gives the same vectors without the char-CNN."""
EPILOG = """\
example:
  bilm-keras dump-tokens --vocab_file vocab.txt --options_file options.json \\
      --weight_file lm_weights.hdf5 --outfile elmo_token_embeddings.hdf5"""


def add_arguments(parser):
    parser.add_argument("--vocab_file", required=True,
                        help="vocabulary, one token per line")
    parser.add_argument("--options_file", required=True,
                        help="the biLM's options.json")
    parser.add_argument("--weight_file", required=True,
                        help="the biLM's weights (bilm-tf HDF5)")
    parser.add_argument("--outfile", required=True, help="output HDF5 file")
    add_overwrite_argument(parser)


def check(args) -> None:
    check_file(args.vocab_file, "--vocab_file")
    check_options(args.options_file, "--options_file")
    check_file(args.weight_file, "--weight_file")
    check_output_file(args.outfile, "--outfile", args.overwrite)


def run(args) -> None:
    from bilm_keras.embedding.dump import dump_token_embeddings

    dump_token_embeddings(args.vocab_file, args.options_file,
                          args.weight_file, args.outfile)
    print(f"wrote {args.outfile}")
