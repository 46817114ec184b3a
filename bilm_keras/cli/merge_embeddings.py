"""``bilm-keras merge-embeddings``: the shards of one ``embed`` run, one
file."""

import os

from bilm_keras.cli._common import (
    CommandError,
    add_overwrite_argument,
    check_file,
    check_output_file,
)

NAME = "merge-embeddings"
ALIAS = "merge_embeddings.py"
HELP = "join the shards of `embed --shard K/N` into one HDF5 file"
#: merging copies HDF5 datasets: no TensorFlow
NEEDS_TENSORFLOW = False
DESCRIPTION = """\
Join the N shard files written by `bilm-keras embed --shard K/N` (one per
process, machine or array task) into one HDF5 file, equal to the output of
the same `embed` run in one process: every line's dataset, one
`sentence_to_index` and the run's attributes. The shards are checked
first: each must be there exactly once and all must come from one run
(same model, vocabulary, input file and flags); a missing, duplicated or
foreign shard is an error naming it. Datasets are copied one at a time
(memory stays flat but for sentence_to_index), into a temporary file
renamed onto --outfile when complete. An existing --outfile is refused
unless --overwrite."""
EPILOG = """\
examples:
  bilm-keras merge-embeddings --outfile elmo.hdf5 part-*.hdf5"""


def add_arguments(parser):
    parser.add_argument("--outfile", required=True,
                        help="the merged HDF5 file")
    parser.add_argument("shard_files", nargs="+", metavar="SHARD",
                        help="the shard files (any order)")
    add_overwrite_argument(parser)


def check(args) -> None:
    """The shards make one whole run, and the output may be written."""
    from bilm_keras.embedding.merge import check_shard_files

    check_output_file(args.outfile, "--outfile", args.overwrite)
    for path in args.shard_files:
        check_file(path, "SHARD")
        if os.path.abspath(path) == os.path.abspath(args.outfile):
            raise CommandError(f"--outfile {args.outfile}: is also a shard "
                               "to merge")
    check_shard_files(args.shard_files)  # EmbeddingRunError names the file


def run(args) -> int:
    from bilm_keras.embedding.merge import merge_embedding_files

    n = merge_embedding_files(args.outfile, args.shard_files)
    print(f"wrote {n} sentences from {len(args.shard_files)} shards to "
          f"{args.outfile}")
    return n

