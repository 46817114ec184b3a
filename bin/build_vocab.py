"""Build a bilm-tf vocabulary from a tokenized corpus.

Alias of ``bilm-keras build-vocab`` (same flags; ``--help`` lists them)::

    python bin/build_vocab.py --train_prefix 'corpus/train/*.txt' \\
        --vocab_file vocab.txt [--min_count 1] [--max_size 800000]

Writes ``vocab.txt`` (``<S>``, ``</S>``, ``<UNK>``, then tokens by
descending count) and ``vocab.txt.json`` (n_train_tokens, n_sentences,
source glob), which ``bin/train_elmo.py`` reads.
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras build-vocab``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="build-vocab", prog="build_vocab.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="build-vocab", prog="build_vocab.py"))
