"""The command-line flags ``train_elmo.py`` and ``restart.py`` share
(bilm-tf's names), defined once."""

import argparse


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds bilm-tf's training flags to ``parser``."""
    parser.add_argument("--save_dir", required=True,
                        help="Location of checkpoint files")
    parser.add_argument("--vocab_file", required=True,
                        help="Vocabulary file")
    parser.add_argument("--train_prefix", required=True,
                        help="Prefix (glob) for train files")
    parser.add_argument("--n_gpus", type=int, default=None,
                        help="GPUs to use (default: all visible)")
    parser.add_argument("--batch_size", type=int, default=None,
                        help="global batch, split over the replicas")
    parser.add_argument("--n_epochs", type=int, default=None)
    parser.add_argument("--n_train_tokens", type=int, default=None,
                        help="default: counted from the corpus")
    parser.add_argument("--save_every", type=int, default=1250,
                        help="steps between checkpoints")
    parser.add_argument("--log_every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None)


def run_kwargs(args: argparse.Namespace) -> dict:
    """The keyword arguments of ``train``/``restart`` from those flags."""
    return dict(
        save_dir=args.save_dir, train_prefix=args.train_prefix,
        vocab_file=args.vocab_file, n_gpus=args.n_gpus,
        batch_size=args.batch_size, n_epochs=args.n_epochs,
        n_train_tokens=args.n_train_tokens, save_every=args.save_every,
        log_every=args.log_every, seed=args.seed,
    )
