"""ELMo from character input: the most common way to use a biLM.

Runs as-is against bilm-tf's small test model::

    python usage_character.py [MODEL_DIR]

MODEL_DIR holds ``options.json``, ``lm_weights.hdf5`` and ``vocab_test.txt``
(default: ``$BILM_FIXTURES/model``, else ``tests/fixtures/bilm-tf/model``).
"""

import os
import sys

from bilm_keras import Batcher, BidirectionalLanguageModel, weight_layers


def model_dir_from_argv(argv):
    if len(argv) > 1:
        return argv[1]
    root = os.environ.get(
        "BILM_FIXTURES",
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests",
                     "fixtures", "bilm-tf"),
    )
    return os.path.join(root, "model")


def main(argv=None):
    model_dir = model_dir_from_argv(argv or sys.argv)
    vocab_file = os.path.join(model_dir, "vocab_test.txt")
    options_file = os.path.join(model_dir, "options.json")
    weight_file = os.path.join(model_dir, "lm_weights.hdf5")

    # Tokenized context and question, as lists of tokens.
    raw_context = [
        "Pretrained biLMs compute representations useful for NLP tasks .",
        "They give state of the art performance for many tasks .",
    ]
    raw_question = ["What are biLMs useful for ?"]
    context = [sentence.split() for sentence in raw_context]
    question = [sentence.split() for sentence in raw_question]

    # Sentences -> char ids (batch, n_tokens + 2, 50).
    batcher = Batcher(vocab_file, 50)
    context_ids = batcher.batch_sentences(context)
    question_ids = batcher.batch_sentences(question)

    # One biLM serves both inputs: it holds the weights, calls are stateless.
    bilm = BidirectionalLanguageModel(options_file, weight_file)
    context_ops = bilm(context_ids)
    question_ops = bilm(question_ids)

    # ELMo: a learned weighted sum of the layers, shared by context and
    # question by using the same name (as bilm-tf's variable reuse).
    elmo_context = weight_layers("input", context_ops, l2_coef=0.0)
    elmo_question = weight_layers("input", question_ops, l2_coef=0.0)

    print("context char ids     ", context_ids.shape)
    print("context lm_embeddings", tuple(context_ops["lm_embeddings"].shape),
          "(batch, n_layers + 1, time, 2 * projection_dim)")
    print("context ELMo         ", tuple(elmo_context["weighted_op"].shape),
          "(batch, time, 2 * projection_dim)")
    print("question ELMo        ", tuple(elmo_question["weighted_op"].shape))
    print("lengths              ", context_ops["lengths"].numpy().tolist())
    return elmo_context, elmo_question


if __name__ == "__main__":
    main()
