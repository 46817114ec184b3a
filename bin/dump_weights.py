"""Write a trained checkpoint as bilm-tf HDF5 (bilm-tf's
``dump_weights.py``), with an ``options.json`` for prediction beside it.

Usage::

    python bin/dump_weights.py --save_dir checkpoints/ \\
        --outfile model/lm_weights.hdf5
"""

import argparse

from bilm_keras.training import dump_weights


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--save_dir", required=True,
                        help="Location of checkpoint files")
    parser.add_argument("--outfile", required=True,
                        help="Output hdf5 file with weights")
    args = parser.parse_args(argv)
    result = dump_weights(args.save_dir, args.outfile)
    print(f"wrote {result['weight_file']} and {result['options_file']}")
    return result


if __name__ == "__main__":
    main()
