"""Train a biLM (bilm-tf's ``bin/train_elmo.py``, same flags).

Usage::

    python bin/train_elmo.py --train_prefix 'corpus/train/*' \\
        --vocab_file vocab.txt --save_dir checkpoints/ \\
        [--options options/elmo_2x4096_512_2048cnn_2xhighway.json] \\
        [--n_gpus 3] [--batch_size 384] [--n_epochs 10]

``--batch_size`` is the global batch (split over the replicas);
``n_train_tokens`` is counted from the corpus unless given.

Domain adaptation: continue training a published biLM on your text::

    python bin/train_elmo.py --train_prefix 'domain/train/*' \\
        --vocab_file vocab.txt --save_dir adapted/ \\
        --options elmo/options.json --init_weights elmo/lm_weights.hdf5 \\
        --freeze_lm_steps 500 [--softmax_bias unigram] [--n_epochs 1]
"""

import argparse
import os

from bilm_keras.options import BiLMOptions
from bilm_keras.training import train
from bilm_keras.training.cli import (
    adaptation_kwargs,
    add_adaptation_arguments,
    add_run_arguments,
    run_kwargs,
)

DEFAULT_OPTIONS = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "options",
    "elmo_2x4096_512_2048cnn_2xhighway.json",
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_run_arguments(parser)
    parser.add_argument("--options", default=DEFAULT_OPTIONS,
                        help="options.json of the model to train")
    add_adaptation_arguments(parser)
    args = parser.parse_args(argv)
    return train(options=BiLMOptions.from_json(args.options),
                 **run_kwargs(args), **adaptation_kwargs(args))


if __name__ == "__main__":
    main()
