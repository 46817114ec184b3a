"""Precompute ELMo for a whole dataset once, then read it from HDF5.

``dump_bilm_embeddings`` writes every layer of every sentence (one HDF5
dataset per line, key = line number, shape (n_layers + 1, n_tokens, dim)),
and AllenNLP's ``sentence_to_index`` (a JSON map: sentence -> key).
Training a task model then reads vectors instead of running the biLM each
epoch. To save space keep only what the task uses — an ``EmbeddingSpec``
with ``output="average"``, ``"top"`` or ``"sentence_mean"``, some
``layers``, or float16 — see the README::

    python usage_cached.py [MODEL_DIR]
"""

import json
import os
import sys
import tempfile

import h5py

from bilm_keras import dump_bilm_embeddings
from usage_character import model_dir_from_argv


def main(argv=None):
    model_dir = model_dir_from_argv(argv or sys.argv)
    vocab_file = os.path.join(model_dir, "vocab_test.txt")
    options_file = os.path.join(model_dir, "options.json")
    weight_file = os.path.join(model_dir, "lm_weights.hdf5")

    sentences = [
        "Pretrained biLMs compute representations useful for NLP tasks .",
        "They give state of the art performance for many tasks .",
        "What are biLMs useful for ?",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        dataset_file = os.path.join(tmp, "dataset_file.txt")
        with open(dataset_file, "w", encoding="utf-8") as f:
            f.write("\n".join(sentences) + "\n")
        embedding_file = os.path.join(tmp, "elmo_embeddings.hdf5")
        dump_bilm_embeddings(vocab_file, dataset_file, options_file,
                             weight_file, embedding_file)

        shapes = {}
        with h5py.File(embedding_file, "r") as fin:
            # each sentence's dataset, as in AllenNLP's files
            index = json.loads(fin["sentence_to_index"][0])
            for sentence in sentences:
                key = index[sentence]
                shapes[key] = fin[key].shape
                print(f"sentence {key}: {fin[key].shape}"
                      "  (n_layers + 1, n_tokens, 2 * projection_dim)")
    return shapes


if __name__ == "__main__":
    main()
