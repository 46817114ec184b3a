"""Continue training from the latest checkpoint (bilm-tf's ``restart.py``).

Usage::

    python bin/restart.py --save_dir checkpoints/ --vocab_file vocab.txt \\
        --train_prefix 'corpus/train/*' [--n_epochs 1] [--batch_size 128]

Without ``--n_epochs`` it finishes the run the saved options describe
(after a crash); with it, it trains that many more epochs (fine-tuning).
"""

import argparse

from bilm_keras.training import restart
from bilm_keras.training.cli import add_run_arguments, run_kwargs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    return restart(**run_kwargs(args))


if __name__ == "__main__":
    main()
