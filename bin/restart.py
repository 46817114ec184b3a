"""Continue training from the latest checkpoint (bilm-tf's ``restart.py``).

Usage::

    python bin/restart.py --save_dir checkpoints/ --vocab_file vocab.txt \\
        --train_prefix 'corpus/train/*' [--n_epochs 1] [--batch_size 128]

Without ``--n_epochs`` it finishes the run the saved options describe
(after a crash); with it, it trains that many more epochs (fine-tuning).
"""

import argparse

from bilm_keras.training import restart


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--save_dir", required=True,
                        help="Location of checkpoint files")
    parser.add_argument("--vocab_file", required=True,
                        help="Vocabulary file")
    parser.add_argument("--train_prefix", required=True,
                        help="Prefix (glob) for train files")
    parser.add_argument("--n_gpus", type=int, default=None)
    parser.add_argument("--batch_size", type=int, default=None)
    parser.add_argument("--n_epochs", type=int, default=None)
    parser.add_argument("--n_train_tokens", type=int, default=None)
    parser.add_argument("--save_every", type=int, default=1250)
    parser.add_argument("--log_every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    return restart(
        save_dir=args.save_dir, train_prefix=args.train_prefix,
        vocab_file=args.vocab_file, n_gpus=args.n_gpus,
        batch_size=args.batch_size, n_epochs=args.n_epochs,
        n_train_tokens=args.n_train_tokens, save_every=args.save_every,
        log_every=args.log_every, seed=args.seed,
    )


if __name__ == "__main__":
    main()
