"""Convert an ELMoForManyLangs model directory into options.json + bilm-tf
HDF5 weights (and its dictionaries).

Alias of ``bilm-keras convert-manylangs`` (same flags; ``--help`` lists
them)::

    python bin/convert_manylangs.py --model_dir zhs.model --outdir zhs-elmo
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras convert-manylangs``; raises its errors and returns
    its result (for programs and tests)."""
    return cli.run(argv, command="convert-manylangs",
                   prog="convert_manylangs.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="convert-manylangs",
                      prog="convert_manylangs.py"))
