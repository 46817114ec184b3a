"""A durable embedding run that pauses at one point, so that a test can
kill it there (``python paused_embed.py POINT:INDEX OUTFILE MODEL_DIR
DATASET_FILE BATCH_SIZE CHUNK_SIZE``).

The pause goes in through the run's documented seam, its ``on_event``
progress callback (a field of ``DumpSettings``, told each
:class:`bilm_keras.embedding.runs.RunEvent`); the run is what
``bilm-keras embed --batch_size B --chunk_size C`` does, so that the
command's ``--resume`` continues it.
"""

import os
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")


def main(pause, outfile, model_dir, dataset_file, batch_size, chunk_size):
    from bilm_keras import EmbeddingSpec, dump_bilm_embeddings
    from bilm_keras.embedding.dump_plan import DumpSettings

    def pause_there(event):
        if f"{event.point}:{event.index}" == pause:
            print(f"paused at {pause}", file=sys.stderr, flush=True)
            time.sleep(30)  # long enough to be killed; bounded

    dump_bilm_embeddings(
        os.path.join(model_dir, "vocab_test.txt"), dataset_file,
        os.path.join(model_dir, "options.json"),
        os.path.join(model_dir, "lm_weights.hdf5"), outfile, EmbeddingSpec(),
        DumpSettings(batch_size=int(batch_size), chunk_size=int(chunk_size),
                     on_event=pause_there))


if __name__ == "__main__":
    main(*sys.argv[1:])
