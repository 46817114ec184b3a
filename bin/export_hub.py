"""Export a biLM as a TF-Hub-style SavedModel (``default``, ``tokens`` and
``elmo`` signatures, as google/elmo/3) for ``hub.load``/``hub.KerasLayer``.

Usage::

    python bin/export_hub.py --options_file model/options.json \\
        --weight_file model/lm_weights.hdf5 --vocab_file model/vocab.txt \\
        --outdir elmo_savedmodel
    python bin/export_hub.py --save_dir checkpoints/ --outdir elmo_savedmodel

The scalar-mix weights are trainable; add ``--trainable_lm`` to make every
LM weight trainable too. A non-empty ``--outdir`` is refused unless
``--overwrite`` is given (it is then replaced once the new export is
complete).
"""

import argparse

from bilm_keras.export.hub_module import export_hub, export_hub_from_save_dir


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--options_file", help="Options json file")
    parser.add_argument("--weight_file", help="Weight hdf5 file")
    parser.add_argument("--save_dir",
                        help="Training checkpoint directory (instead of "
                             "--options_file/--weight_file)")
    parser.add_argument("--outdir", required=True,
                        help="SavedModel directory to write")
    parser.add_argument("--vocab_file",
                        help="Vocabulary shipped as an asset (optional)")
    parser.add_argument("--trainable_lm", action="store_true",
                        help="Make the LM weights trainable too")
    parser.add_argument("--overwrite", action="store_true",
                        help="Replace a non-empty --outdir")
    args = parser.parse_args(argv)
    hdf5 = args.options_file is not None or args.weight_file is not None
    if args.save_dir is not None and hdf5:
        parser.error("give either --save_dir or --options_file and "
                     "--weight_file, not both")
    common = dict(outdir=args.outdir, vocab_file=args.vocab_file,
                  trainable_lm=args.trainable_lm, overwrite=args.overwrite)
    if args.save_dir is not None:
        outdir = export_hub_from_save_dir(save_dir=args.save_dir, **common)
    elif args.options_file is None or args.weight_file is None:
        parser.error("--options_file and --weight_file are both required "
                     "(or give --save_dir)")
    else:
        outdir = export_hub(options_file=args.options_file,
                            weight_file=args.weight_file, **common)
    print(f"wrote {outdir}")
    return outdir


if __name__ == "__main__":
    main()
