"""Embed every sentence of a text file with a biLM and cache it in HDF5.

Alias of ``bilm-keras embed`` (same flags; ``--help`` lists them)::

    python bin/dump_bilm_embeddings.py --options_file options.json \\
        --weight_file lm_weights.hdf5 --dataset_file sentences.txt \\
        --outfile elmo.hdf5 [--vocab_file vocab.txt] [--batch_size 32] \\
        [--all | --top | --average | --sentence_mean] [--layers 1 2] \\
        [--float16]
    python bin/dump_bilm_embeddings.py --model elmo-original \
        --dataset_file sentences.txt --outfile elmo.hdf5

One dataset per line (key = line number) and AllenNLP's
``sentence_to_index``; stateless, sentences are length-sorted internally
and written in file order.
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras embed``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="embed", prog="dump_bilm_embeddings.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="embed", prog="dump_bilm_embeddings.py"))
