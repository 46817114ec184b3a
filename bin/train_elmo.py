"""Train a biLM (bilm-tf's ``bin/train_elmo.py``, same flags).

Alias of ``bilm-keras train`` (same flags; ``--help`` lists them)::

    python bin/train_elmo.py --train_prefix 'corpus/train/*' \\
        --vocab_file vocab.txt --save_dir checkpoints/ \\
        [--options elmo_2x4096_512_2048cnn_2xhighway] \\
        [--n_gpus 3] [--batch_size 384] [--n_epochs 10]

Domain adaptation: continue training a published biLM on your text::

    python bin/train_elmo.py --train_prefix 'domain/train/*' \\
        --vocab_file vocab.txt --save_dir adapted/ \\
        --options elmo/options.json --init_weights elmo/lm_weights.hdf5 \\
        --freeze_lm_steps 500 [--softmax_bias unigram] [--n_epochs 1]
    python bin/train_elmo.py --train_prefix 'domain/train/*' \
        --vocab_file vocab.txt --save_dir adapted/ \
        --init_model elmo-original --freeze_lm_steps 500
"""

import sys

from bilm_keras import cli


def main(argv=None):
    """Runs ``bilm-keras train``; raises its errors and returns its result
    (for programs and tests)."""
    return cli.run(argv, command="train", prog="train_elmo.py")


if __name__ == "__main__":
    sys.exit(cli.main(command="train", prog="train_elmo.py"))
