"""Convert a TF1 Hub module of ELMo into options.json + bilm-tf
HDF5 weights (and its learned mix).

Alias of ``bilm-keras convert-tfhub`` (same flags; ``--help`` lists
them)::

    python bin/convert_tfhub.py --module elmo_3.tar.gz --outdir elmo-3
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras convert-tfhub``; raises its errors and returns
    its result (for programs and tests)."""
    return cli.run(argv, command="convert-tfhub",
                   prog="convert_tfhub.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="convert-tfhub",
                      prog="convert_tfhub.py"))
