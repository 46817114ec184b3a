"""Export a biLM as a TF-Hub-style SavedModel (``default``, ``tokens`` and
``elmo`` signatures, as google/elmo/3) for ``hub.load``/``hub.KerasLayer``.

Alias of ``bilm-keras export-hub`` (same flags; ``--help`` lists them)::

    python bin/export_hub.py --options_file model/options.json \\
        --weight_file model/lm_weights.hdf5 --vocab_file model/vocab.txt \\
        --outdir elmo_savedmodel
    python bin/export_hub.py --save_dir checkpoints/ --outdir elmo_savedmodel
    python bin/export_hub.py --model manylangs-zh --outdir elmo_zh_savedmodel
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras export-hub``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="export-hub", prog="export_hub.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="export-hub", prog="export_hub.py"))
