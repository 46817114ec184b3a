"""``bilm-keras build-vocab``: a bilm-tf vocabulary from a corpus."""

import argparse

from bilm_keras.cli._common import (
    check_glob,
    given_flags,
    int_in_range,
    positive_int,
)

NAME = "build-vocab"
ALIAS = "build_vocab.py"
HELP = "build a vocabulary from a tokenized corpus"
NEEDS_TENSORFLOW = False
DESCRIPTION = """\
Count the tokens of a corpus (one whitespace-tokenized sentence per line,
UTF-8) and write a bilm-tf vocabulary: <S>, </S>, <UNK>, then the tokens by
descending count (ties in order of first occurrence). Beside it,
VOCAB_FILE.json records n_train_tokens, the sentence count and the glob,
which `bilm-keras train` reads (nobody sets n_train_tokens by hand)."""
EPILOG = """\
example:
  bilm-keras build-vocab --train_prefix 'corpus/train/*.txt' \\
      --vocab_file vocab.txt --min_count 2"""


# the special tokens take the first three lines
_max_size = int_in_range(3, allowed="an integer >= 3 (<S>, </S>, <UNK>)")


def add_arguments(parser):
    parser.add_argument("--train_prefix", required=True,
                        help="glob of the training files (quote it)")
    parser.add_argument("--vocab_file", required=True,
                        help="output vocabulary file")
    # its default is build_vocab()'s, given to it only when the flag is
    parser.add_argument("--min_count", type=positive_int,
                        default=argparse.SUPPRESS,
                        help="keep tokens seen at least this often "
                             "(default: every token)")
    parser.add_argument("--max_size", type=_max_size, default=None,
                        help="at most this many lines, special tokens "
                             "included (default: no limit)")


def check(args) -> None:
    check_glob(args.train_prefix, "--train_prefix")


def run(args) -> dict:
    from bilm_keras.data.vocab_builder import build_vocab

    stats = build_vocab(args.train_prefix, args.vocab_file,
                        max_size=args.max_size,
                        **given_flags(args, "min_count"))
    print(f"Wrote {stats['n_tokens_vocab']} tokens to {args.vocab_file} "
          f"({stats['n_types']} types, n_train_tokens="
          f"{stats['n_train_tokens']}, {stats['n_sentences']} sentences, "
          f"{stats['n_skipped_lines']} blank lines skipped, "
          f"{stats['n_oov_tokens']} tokens will be <UNK>)")
    return stats
