"""Write a trained checkpoint as bilm-tf HDF5 (bilm-tf's
``dump_weights.py``), with an ``options.json`` for prediction beside it.

Alias of ``bilm-keras dump-weights`` (same flags; ``--help`` lists them)::

    python bin/dump_weights.py --save_dir checkpoints/ \\
        --outfile model/lm_weights.hdf5
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras dump-weights``; raises its errors and returns its
    result (for programs and tests)."""
    return cli.run(argv, command="dump-weights", prog="dump_weights.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="dump-weights", prog="dump_weights.py"))
