"""Write the char-CNN embedding of every vocabulary token (bilm-tf's
``dump_token_embeddings``), for a token-input biLM. Usage::

    python bin/dump_token_embeddings.py --vocab_file vocab.txt \\
        --options_file options.json --weight_file lm_weights.hdf5 \\
        --outfile elmo_token_embeddings.hdf5
"""

import argparse

from bilm_keras.dump import dump_token_embeddings


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab_file", required=True)
    parser.add_argument("--options_file", required=True)
    parser.add_argument("--weight_file", required=True)
    parser.add_argument("--outfile", required=True)
    args = parser.parse_args(argv)
    dump_token_embeddings(args.vocab_file, args.options_file,
                          args.weight_file, args.outfile)
    print(f"wrote {args.outfile}")


if __name__ == "__main__":
    main()
