"""Heldout perplexity of a trained biLM (bilm-tf's ``run_test.py``).

Usage::

    python bin/run_test.py --save_dir checkpoints/ --vocab_file vocab.txt \\
        --test_prefix 'corpus/heldout/*' [--batch_size 256]
"""

import argparse

from bilm_keras.training import evaluate


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--save_dir", required=True,
                        help="Location of checkpoint files")
    parser.add_argument("--vocab_file", required=True,
                        help="Vocabulary file")
    parser.add_argument("--test_prefix", required=True,
                        help="Prefix (glob) for test files")
    parser.add_argument("--batch_size", type=int, default=256,
                        help="Batch size")
    args = parser.parse_args(argv)
    return evaluate(save_dir=args.save_dir, vocab_file=args.vocab_file,
                    test_prefix=args.test_prefix, batch_size=args.batch_size)


if __name__ == "__main__":
    main()
