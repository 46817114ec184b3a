"""Continue training from the latest checkpoint (bilm-tf's ``restart.py``).

Alias of ``bilm-keras restart`` (same flags; ``--help`` lists them)::

    python bin/restart.py --save_dir checkpoints/ --vocab_file vocab.txt \\
        --train_prefix 'corpus/train/*' [--n_epochs 1] [--batch_size 128]
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras restart``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="restart", prog="restart.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="restart", prog="restart.py"))
