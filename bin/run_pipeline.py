"""Vocabulary -> train a tiny biLM -> heldout perplexity -> HDF5 -> ELMo.

Alias of ``bilm-keras pipeline`` (same flags; ``--help`` lists them)::

    python bin/run_pipeline.py          # writes runs/pipeline-<timestamp>/
    python bin/run_pipeline.py --out_dir /tmp/elmo_pipeline
    python bin/run_pipeline.py --out_dir out/ --corpus 'my_corpus/*.txt' \\
        [--heldout 'my_heldout/*.txt'] [--options small]
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras pipeline``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="pipeline", prog="run_pipeline.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="pipeline", prog="run_pipeline.py"))
