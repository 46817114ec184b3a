"""A BiLSTM tagger on ELMo concatenated with the task's own word
embeddings (the Paddle LAC / Peters et al. 2018 recipe), in Keras 3.

``ELMoEmbedding`` gives the learned mix `(batch, time, 2 *
projection_dim)` of padded token matrices, with a mask; a trainable
Embedding over the task's vocabulary gives `(batch, time, word_dim)`;
their concatenation (which keeps the mask) feeds a bidirectional LSTM,
which skips the padding, and a softmax over tags. Padded positions carry
no loss.

The tagging set is synthetic and tiny: sentences drawn from a small word
list, each word tagged with its class (DET, NOUN, VERB, NUM, PUNCT).

Usage::

    python examples/elmo_plus_word_embeddings.py               # fixture model
    python examples/elmo_plus_word_embeddings.py --model DIR --steps 200

``--model`` is anything ``ELMoEmbedding.from_pretrained`` takes.

The last line printed is ``RESULT {json}`` with the losses.
"""

import argparse
import json
import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

WORDS = {
    "DET": ["the", "a", "every", "this"],
    "NOUN": ["cat", "dog", "model", "sentence", "city", "北京"],
    "VERB": ["sees", "reads", "likes", "predicts"],
    "NUM": ["1", "42", "2018", "3.14"],
    "PUNCT": [".", ",", "!"],
}
TAGS = ["<pad>"] + sorted(WORDS)


def synthetic_tagging_set(n_sentences, seed=0):
    """``(token lists, tag-id lists)``: DET NOUN VERB [NUM] DET NOUN PUNCT."""
    rng = random.Random(seed)
    sentences, tags = [], []
    for _ in range(n_sentences):
        pattern = ["DET", "NOUN", "VERB"]
        if rng.random() < 0.5:
            pattern.append("NUM")
        pattern += ["DET", "NOUN", "PUNCT"]
        sentences.append([rng.choice(WORDS[t]) for t in pattern])
        tags.append([TAGS.index(t) for t in pattern])
    return sentences, tags


def pad(sentences, tags):
    width = max(len(s) for s in sentences)
    tokens = np.array([s + [""] * (width - len(s)) for s in sentences],
                      dtype=object)
    tag_ids = np.array([t + [0] * (width - len(t)) for t in tags], np.int32)
    weights = (tag_ids > 0).astype(np.float32)
    return tokens, tag_ids, weights


def build_tagger(model, vocabulary, word_dim=8, lstm_units=16):
    import keras

    from bilm_keras import ELMoEmbedding

    tokens = keras.Input(shape=(None,), dtype="string", name="tokens")
    # padded with "": the mask marks the real tokens
    elmo = ELMoEmbedding.from_pretrained(model, name="elmo")(tokens)
    ids = keras.layers.StringLookup(vocabulary=vocabulary)(tokens)  # (B, T)
    words = keras.layers.Embedding(len(vocabulary) + 1, word_dim)(ids)
    x = keras.layers.Concatenate()([elmo, words])  # (B, T, 2P + word_dim)
    x = keras.layers.Bidirectional(
        keras.layers.LSTM(lstm_units, return_sequences=True))(x)
    probs = keras.layers.Dense(len(TAGS), activation="softmax")(x)
    return keras.Model(tokens, probs)


def run(*, model, n_sentences, steps, batch_size, learning_rate,
        seed=0):
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    sentences, tags = synthetic_tagging_set(n_sentences, seed)
    vocabulary = sorted({w for s in sentences for w in s})
    tokens, tag_ids, weights = pad(sentences, tags)
    data = tf.data.Dataset.from_tensor_slices((
        tf.constant(tokens.astype(str)), tag_ids, weights,
    )).shuffle(n_sentences, seed=seed).repeat().batch(batch_size)
    tagger = build_tagger(model, vocabulary)
    tagger.compile(keras.optimizers.Adam(learning_rate),
                  "sparse_categorical_crossentropy",
                  weighted_metrics=["accuracy"])
    # the dataset shuffles itself (above); Keras' own shuffle is for arrays
    history = tagger.fit(data, steps_per_epoch=1, epochs=steps, verbose=0,
                        shuffle=False)
    probs = tagger.predict(tf.constant(tokens.astype(str)), verbose=0)
    correct = (probs.argmax(-1) == tag_ids) * weights
    return dict(
        loss=[float(x) for x in history.history["loss"]],
        accuracy=float(correct.sum() / weights.sum()),
        n_sentences=n_sentences,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="A model name or folder (default: "
                        "bilm-tf's fixture model)")
    parser.add_argument("--n_sentences", type=int, default=64)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--learning_rate", type=float, default=0.02)
    args = parser.parse_args(argv)

    model = args.model or os.path.join(
        os.environ.get("BILM_FIXTURES", os.path.join(
            HERE, "..", "tests", "fixtures", "bilm-tf")), "model")
    result = run(model=model, n_sentences=args.n_sentences,
                 steps=args.steps, batch_size=args.batch_size,
                 learning_rate=args.learning_rate)
    print(f"tagging accuracy {result['accuracy']:.3f} after "
          f"{len(result['loss'])} steps")
    print("RESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
