"""Join the shards of ``bilm-keras embed --shard K/N`` into one HDF5 file.

Alias of ``bilm-keras merge-embeddings`` (same flags; ``--help`` lists
them)::

    python bin/merge_embeddings.py --outfile elmo.hdf5 part-*.hdf5
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras merge-embeddings``; raises its errors and returns
    its result (for programs and tests)."""
    return cli.run(argv, command="merge-embeddings",
                   prog="merge_embeddings.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="merge-embeddings", prog="merge_embeddings.py"))
