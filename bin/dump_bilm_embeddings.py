"""Embed every sentence of a text file with a biLM and cache it in HDF5.

One dataset per line (key = line number), shaped
``(n_layers + 1, n_tokens, 2 * projection_dim)``; stateless, sentences are
length-sorted internally and written in file order. Usage::

    python bin/dump_bilm_embeddings.py --options_file options.json \\
        --weight_file lm_weights.hdf5 --dataset_file sentences.txt \\
        --outfile elmo.hdf5 [--vocab_file vocab.txt] [--batch_size 32] \\
        [--layers 1 2] [--float16]
"""

import argparse

from bilm_keras.dump import dump_bilm_embeddings
from bilm_keras.memory import return_freed_memory


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--options_file", required=True)
    parser.add_argument("--weight_file", required=True)
    parser.add_argument("--dataset_file", required=True,
                        help="one whitespace-tokenized sentence per line")
    parser.add_argument("--outfile", required=True)
    parser.add_argument("--vocab_file", default=None,
                        help="the model's vocabulary (optional for chars)")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--layers", type=int, nargs="+", default=None,
                        help="keep only these layers (0 = token layer)")
    parser.add_argument("--float16", action="store_true",
                        help="store float16 (half the size)")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error(f"--batch_size: expected >= 1, found {args.batch_size}")
    return_freed_memory()  # about 40 MB less resident (bilm_keras.memory)
    n = dump_bilm_embeddings(
        args.vocab_file, args.dataset_file, args.options_file,
        args.weight_file, args.outfile, batch_size=args.batch_size,
        layers=args.layers, dtype="float16" if args.float16 else "float32")
    print(f"wrote {n} sentences to {args.outfile}")


if __name__ == "__main__":
    main()
