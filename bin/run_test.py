"""Heldout perplexity of a trained biLM (bilm-tf's ``run_test.py``).

Alias of ``bilm-keras test`` (same flags; ``--help`` lists them)::

    python bin/run_test.py --save_dir checkpoints/ --vocab_file vocab.txt \\
        --test_prefix 'corpus/heldout/*' [--batch_size 256]
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras test``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="test", prog="run_test.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="test", prog="run_test.py"))
