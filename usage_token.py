"""ELMo from token input: cache the char-CNN output of a fixed vocabulary.

When the vocabulary is known in advance (a task's training and test sets),
the context-independent token embeddings can be computed once with
``dump_token_embeddings`` and the biLM then runs from token ids, skipping
the char-CNN. The embeddings are the same as with character input::

    python usage_token.py [MODEL_DIR]
"""

import os
import sys
import tempfile

import numpy as np

from bilm_keras import (
    Batcher,
    BidirectionalLanguageModel,
    TokenBatcher,
    dump_token_embeddings,
    weight_layers,
)
from usage_character import model_dir_from_argv


def main(argv=None):
    model_dir = model_dir_from_argv(argv or sys.argv)
    options_file = os.path.join(model_dir, "options.json")
    weight_file = os.path.join(model_dir, "lm_weights.hdf5")

    context = [s.split() for s in [
        "Pretrained biLMs compute representations useful for NLP tasks .",
        "They give state of the art performance for many tasks .",
    ]]
    question = ["What are biLMs useful for ?".split()]

    with tempfile.TemporaryDirectory() as tmp:
        # 1. The task's vocabulary, with <S>, </S> and <UNK>.
        vocab_file = os.path.join(tmp, "vocab_small.txt")
        tokens = sorted({t for s in context + question for t in s})
        with open(vocab_file, "w", encoding="utf-8") as f:
            f.write("\n".join(["<S>", "</S>", "<UNK>"] + tokens) + "\n")

        # 2. Its token embeddings, computed once (batched).
        token_embedding_file = os.path.join(tmp, "elmo_token_embeddings.hdf5")
        dump_token_embeddings(vocab_file, options_file, weight_file,
                              token_embedding_file)

        # 3. The biLM from token ids.
        bilm = BidirectionalLanguageModel(
            options_file, weight_file, use_character_inputs=False,
            embedding_weight_file=token_embedding_file)
        batcher = TokenBatcher(vocab_file)
        context_ops = bilm(batcher.batch_sentences(context))
        question_ops = bilm(batcher.batch_sentences(question))
        elmo_context = weight_layers("input", context_ops, l2_coef=0.0)
        elmo_question = weight_layers("input", question_ops, l2_coef=0.0)

        # The same numbers as from characters.
        char_bilm = BidirectionalLanguageModel(options_file, weight_file)
        char_ops = char_bilm(Batcher(vocab_file, 50).batch_sentences(context))
        diff = np.abs(char_ops["lm_embeddings"].numpy()
                      - context_ops["lm_embeddings"].numpy()).max()

    print("context token ids    ", batcher.batch_sentences(context).shape)
    print("context lm_embeddings", tuple(context_ops["lm_embeddings"].shape))
    print("context ELMo         ", tuple(elmo_context["weighted_op"].shape))
    print("question ELMo        ", tuple(elmo_question["weighted_op"].shape))
    print(f"max |token input - char input| = {diff:.2e}")
    return diff


if __name__ == "__main__":
    main()
