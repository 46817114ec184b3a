"""Train a biLM (bilm-tf's ``bin/train_elmo.py``, same flags).

Usage::

    python bin/train_elmo.py --train_prefix 'corpus/train/*' \\
        --vocab_file vocab.txt --save_dir checkpoints/ \\
        [--options options/elmo_2x4096_512_2048cnn_2xhighway.json] \\
        [--n_gpus 3] [--batch_size 384] [--n_epochs 10]

``--batch_size`` is the global batch (split over the replicas);
``n_train_tokens`` is counted from the corpus unless given.
"""

import argparse
import os

from bilm_keras.options import BiLMOptions
from bilm_keras.training import train

DEFAULT_OPTIONS = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "options",
    "elmo_2x4096_512_2048cnn_2xhighway.json",
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--save_dir", required=True,
                        help="Location of checkpoint files")
    parser.add_argument("--vocab_file", required=True,
                        help="Vocabulary file")
    parser.add_argument("--train_prefix", required=True,
                        help="Prefix (glob) for train files")
    parser.add_argument("--options", default=DEFAULT_OPTIONS,
                        help="options.json of the model to train")
    parser.add_argument("--n_gpus", type=int, default=None,
                        help="GPUs to use (default: all visible)")
    parser.add_argument("--batch_size", type=int, default=None)
    parser.add_argument("--n_epochs", type=int, default=None)
    parser.add_argument("--n_train_tokens", type=int, default=None)
    parser.add_argument("--save_every", type=int, default=1250)
    parser.add_argument("--log_every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    return train(
        options=BiLMOptions.from_json(args.options),
        train_prefix=args.train_prefix, vocab_file=args.vocab_file,
        save_dir=args.save_dir, n_gpus=args.n_gpus,
        batch_size=args.batch_size, n_epochs=args.n_epochs,
        n_train_tokens=args.n_train_tokens, save_every=args.save_every,
        log_every=args.log_every, seed=args.seed,
    )


if __name__ == "__main__":
    main()
