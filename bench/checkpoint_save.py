"""How long a training checkpoint takes to write: the grace period a
preemptible run needs (``docs/long-runs.md``).

For each model it builds what ``bilm-keras train`` checkpoints (the
``LanguageModel`` with the run's vocabulary, Adagrad with its
accumulators, the data stream and the LSTM states of the global batch;
placeholder weights: a checkpoint's size and write time do not depend on
the values) and writes it through the training loop's own
``CheckpointWriter`` into a folder, ``--passes`` times, keeping the two
newest as a run does. It reports per model the checkpoint's bytes on disk,
the median seconds of a save (``save_s``: what stands between the signal
and the exit, the data in the page cache) and of the ``os.sync()`` after
it (``sync_s``: until the bytes are on the device; what a machine that is
switched off right after needs as well). One JSON line per model.

Models (``--models``, default all three):

* ``tiny``: the ``tiny`` preset (2 x 128 cells projected to 32), a
  vocabulary of 10,000;
* ``mid``: the ``small`` preset (2 x 1024 cells projected to 128,
  char-CNN 512 filters), 100,000;
* ``published``: the preset ``elmo_2x4096_512_2048cnn_2xhighway`` (2 x
  4096 cells projected to 512, char-CNN 2048 filters), the published
  model's 793,471 words: its softmax and Adagrad's accumulator of it are
  two 1.6 GB tables, about 4 GB to write (and 8 GB of disk for two).

Usage::

    python bench/checkpoint_save.py [--passes 5] [--dir /path/on/the/disk]
    python bench/checkpoint_save.py --models tiny mid --passes 3
    python bench/checkpoint_save.py --quick      # tiny, 2 passes (CI)

``--dir`` should be on the file system the runs save to (a network file
system is slower than a local disk); default a temporary folder.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import common  # noqa: E402

from bilm_keras.layers.initialization import placeholder_weights  # noqa
from bilm_keras.options import BiLMOptions  # noqa: E402
from bilm_keras.training.checkpoints import CheckpointWriter  # noqa: E402
from bilm_keras.training.run_checkpoint import RunCheckpoint  # noqa: E402
from bilm_keras.training.model_setup import build_model  # noqa: E402

MODELS = {
    "tiny": ("tiny.json", 10_000),
    "mid": ("small.json", 100_000),
    "published": ("elmo_2x4096_512_2048cnn_2xhighway.json", 793_471),
}


def folder_bytes(folder, prefix):
    return sum(os.path.getsize(os.path.join(folder, name))
               for name in os.listdir(folder) if name.startswith(prefix + "."))


def time_saves(name, passes, root):
    options_file, vocab = MODELS[name]
    options = BiLMOptions.from_json(common.preset_file(options_file))
    options = options.replace(n_tokens_vocab=vocab)
    started = time.perf_counter()
    with placeholder_weights():
        lm, optimizer = build_model(options)
    # what a run's checkpoint holds (weights, Adagrad, stream, states)
    checkpoint = RunCheckpoint(lm, optimizer,
                               batch_size=options.batch_size).checkpoint
    build_s = time.perf_counter() - started
    folder = tempfile.mkdtemp(prefix=f"ckpt_{name}_", dir=root)
    writer = CheckpointWriter(checkpoint, folder, max_to_keep=2)
    saves, syncs = [], []
    for step in range(1, passes + 1):
        os.sync()  # the previous pass's bytes are not this one's work
        started = time.perf_counter()
        path = writer.save(step)
        saves.append(time.perf_counter() - started)
        started = time.perf_counter()
        os.sync()
        syncs.append(time.perf_counter() - started)
        size = folder_bytes(folder, os.path.basename(path))
    for entry in os.listdir(folder):
        os.remove(os.path.join(folder, entry))
    os.rmdir(folder)
    return dict(model=name, options=options_file, n_tokens_vocab=vocab,
                bytes=size, passes=passes,
                save_s=round(statistics.median(saves), 3),
                save_s_all=[round(s, 3) for s in saves],
                sync_s=round(statistics.median(syncs), 3),
                build_s=round(build_s, 1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", choices=list(MODELS),
                        default=list(MODELS))
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--dir", default=None,
                        help="where to write (default: a temporary folder)")
    parser.add_argument("--quick", action="store_true",
                        help="the tiny model, 2 passes (CI)")
    args = parser.parse_args(argv)
    if args.quick:
        args.models, args.passes = ["tiny"], 2
    for name in args.models:
        print(json.dumps(time_saves(name, args.passes, args.dir)),
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
