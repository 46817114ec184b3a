"""Write the char-CNN embedding of every vocabulary token (bilm-tf's
``dump_token_embeddings``), for a token-input biLM.

Alias of ``bilm-keras dump-tokens`` (same flags; ``--help`` lists them)::

    python bin/dump_token_embeddings.py --vocab_file vocab.txt \\
        --options_file options.json --weight_file lm_weights.hdf5 \\
        --outfile elmo_token_embeddings.hdf5
    python bin/dump_token_embeddings.py --model elmo-original \
        --vocab_file vocab.txt --outfile elmo_token_embeddings.hdf5
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras dump-tokens``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="dump-tokens", prog="dump_token_embeddings.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="dump-tokens", prog="dump_token_embeddings.py"))
