"""Build a bilm-tf vocabulary (``<S>``, ``</S>``, ``<UNK>``, then tokens by
descending count) from a tokenized corpus and record ``n_train_tokens``.

Usage:
    python bin/build_vocab.py --train_prefix 'corpus/train/*.txt' \\
        --vocab_file vocab.txt [--min_count 1] [--max_size 800000]

Writes ``vocab.txt`` and ``vocab.txt.json`` (n_train_tokens, n_sentences,
source glob), which ``bin/train_elmo.py`` reads.
"""

import argparse

from bilm_keras.data.vocab_builder import build_vocab


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train_prefix", required=True,
                        help="glob of the training files (quote it)")
    parser.add_argument("--vocab_file", required=True,
                        help="output vocabulary file")
    parser.add_argument("--min_count", type=int, default=1,
                        help="keep tokens seen at least this often")
    parser.add_argument("--max_size", type=int, default=None,
                        help="at most this many lines, special tokens "
                             "included")
    args = parser.parse_args(argv)
    stats = build_vocab(args.train_prefix, args.vocab_file,
                        min_count=args.min_count, max_size=args.max_size)
    print(f"Wrote {stats['vocab_size']} tokens to {args.vocab_file} "
          f"({stats['n_types']} types, n_train_tokens="
          f"{stats['n_train_tokens']}, {stats['n_sentences']} sentences, "
          f"{stats['n_skipped_lines']} blank lines skipped, "
          f"{stats['n_oov_tokens']} tokens will be <UNK>)")
    return stats


if __name__ == "__main__":
    main()
