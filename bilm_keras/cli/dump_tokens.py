"""``bilm-keras dump-tokens``: the char-CNN embedding of every vocabulary
token, for a token-input biLM."""

from bilm_keras.cli._common import (
    CommandError,
    add_overwrite_argument,
    check_file,
    check_options,
    check_output_file,
)
from bilm_keras.cli._model_flags import (
    ModelJob,
    add_model_argument,
    check_model_flags,
    model_job,
    resolve_model_flag,
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
which gives the same vectors without the char-CNN. The biLM is a published
one by name (--model; its own vocabulary is the default --vocab_file where
it ships one) or your own files (--options_file and --weight_file)."""
EPILOG = """\
examples:
  bilm-keras dump-tokens --vocab_file vocab.txt --options_file options.json \\
      --weight_file lm_weights.hdf5 --outfile elmo_token_embeddings.hdf5
  bilm-keras dump-tokens --model elmo-original --vocab_file vocab.txt \\
      --outfile elmo_token_embeddings.hdf5"""


def add_arguments(parser):
    parser.add_argument("--vocab_file",
                        help="vocabulary, one token per line (required, "
                             "unless the --model ships one)")
    add_model_argument(parser, what="--options_file and --weight_file")
    parser.add_argument("--options_file", help="the biLM's options.json")
    parser.add_argument("--weight_file",
                        help="the biLM's weights (bilm-tf HDF5)")
    parser.add_argument("--outfile", required=True, help="output HDF5 file")
    add_overwrite_argument(parser)


def check_flags(args, parser) -> None:
    """``--model``, or ``--options_file``, ``--weight_file`` and
    ``--vocab_file``."""
    check_model_flags(args, parser)
    if args.model is None and args.vocab_file is None:
        parser.error("the following arguments are required: --vocab_file")


def check(args) -> ModelJob:
    if args.vocab_file is not None:
        check_file(args.vocab_file, "--vocab_file")
    check_output_file(args.outfile, "--outfile", args.overwrite)
    job = model_job(args, None if args.model is None else _model(args))
    if job.vocab_file is None:
        raise _no_vocabulary(args.model)
    check_options(job.options_file, "--options_file")
    check_file(job.weight_file, "--weight_file")
    return job


def _model(args):
    """``--model``'s files, fetched.

    A registered model that cannot give token embeddings, one of word
    input or one that ships no vocabulary when ``--vocab_file`` is not
    given, is refused before a download."""
    from bilm_keras.pretrained import check_before_download

    check_before_download(args.model, vocab_given=args.vocab_file is not None,
                          vocab_flag="--vocab_file", token_input=True,
                          char_cnn=True)
    return resolve_model_flag(args.model, "--model")


def _no_vocabulary(model: str) -> CommandError:
    return CommandError(f"--vocab_file: required: the model {model} ships "
                        "no vocabulary")


def run(job: ModelJob) -> None:
    from bilm_keras.embedding.dump import dump_token_embeddings

    dump_token_embeddings(job.vocab_file, job.options_file,
                          job.weight_file, job.args.outfile)
    print(f"wrote {job.args.outfile}")
