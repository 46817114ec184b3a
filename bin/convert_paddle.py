"""Convert a PaddlePaddle ELMo checkpoint (a Fluid persistables directory
or a PaddleNLP ``.pdparams``) into options.json + bilm-tf HDF5 weights +
vocab.txt.

Alias of ``bilm-keras convert-paddle`` (same flags; ``--help`` lists
them)::

    python bin/convert_paddle.py --checkpoint baike_elmo_checkpoint \\
        --vocab_file vocabulary_min5k.txt --outdir baike-elmo
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras convert-paddle``; raises its errors and returns
    its result (for programs and tests)."""
    return cli.run(argv, command="convert-paddle", prog="convert_paddle.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="convert-paddle", prog="convert_paddle.py"))
