"""Sentence classifier on ELMo: sentence -> ``ELMoEmbedding`` (the learned
mix, masked) -> mean over the real tokens -> Dense -> sigmoid, trained
with ``model.fit`` (the old TF-Hub pattern, ``hub.Module(".../elmo/2",
trainable=True)`` + Dense, on today's Keras).

The task is built offline from bilm-tf's fixture text: real sentences
(label 1) against the same words shuffled (label 0). Bag-of-words
features cannot tell them apart; ELMo's LSTM layers see word order. With
bilm-tf's toy fixture model (16-d projections) and ~70 examples the head
fits the training set but held-out accuracy stays near chance: the point
here is the wiring; give a real model and more text for real numbers.

Usage::

    python examples/keras_text_classifier.py                  # fixture model
    python examples/keras_text_classifier.py --model elmo-small \\
        --text_file sentences.txt --epochs 30

``--model`` is anything ``ELMoEmbedding.from_pretrained`` takes (a
published model's name, a model folder, a converted model). The last line
printed is ``RESULT {json}`` with the losses and accuracies.
"""

import argparse
import json
import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def fixtures_root():
    return os.environ.get(
        "BILM_FIXTURES",
        os.path.join(HERE, "..", "tests", "fixtures", "bilm-tf"),
    )


def read_sentences(text_file=None):
    """Sentences (one string each) from a text file, or the fixtures."""
    if text_file is not None:
        with open(text_file, encoding="utf-8") as f:
            return [line.strip() for line in f if len(line.split()) > 2]
    root = fixtures_root()
    with open(os.path.join(root, "model", "lm_embeddings_sentences.json"),
              encoding="utf-8") as f:
        sentences = [s.strip() for lst in json.load(f) for s in lst]
    with open(os.path.join(root, "train", "data.txt"), encoding="utf-8") as f:
        sentences += [line.strip() for line in f]
    return [s for s in sentences if len(s.split()) > 2]


def labelled_set(sentences, seed=0):
    """``(texts, labels)``: each sentence (1) and a word-shuffled copy (0)."""
    rng = random.Random(seed)
    texts, labels = [], []
    for sentence in sentences:
        words = sentence.split()
        shuffled = words[:]
        while shuffled == words:
            rng.shuffle(shuffled)
        texts += [sentence, " ".join(shuffled)]
        labels += [1, 0]
    order = list(range(len(texts)))
    rng.shuffle(order)
    return [texts[i] for i in order], np.array(
        [labels[i] for i in order], np.float32)


def build_classifier(model, hidden=64):
    import keras

    from bilm_keras import ELMoEmbedding

    text = keras.Input(shape=(), dtype="string", name="sentence")
    elmo = ELMoEmbedding.from_pretrained(model, name="elmo")
    x = elmo(text)  # (batch, time, 2 * projection_dim), masked
    # the mask keeps the padding out of the mean
    x = keras.layers.GlobalAveragePooling1D()(x)  # (batch, 2 * proj)
    # a small biLM's vectors are small (the fixture's: std ~0.01 per
    # feature); standardising them lets the head learn at a normal rate
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Dense(hidden, activation="relu")(x)
    prob = keras.layers.Dense(1, activation="sigmoid")(x)
    return keras.Model(text, prob), elmo


def run(*, model, texts, labels, epochs, batch_size, learning_rate,
        test_fraction=0.25, seed=0):
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    n_test = max(1, int(len(texts) * test_fraction))
    train = tf.data.Dataset.from_tensor_slices(
        (tf.constant(texts[n_test:]), labels[n_test:])).batch(batch_size)
    test = tf.data.Dataset.from_tensor_slices(
        (tf.constant(texts[:n_test]), labels[:n_test])).batch(batch_size)
    classifier, elmo = build_classifier(model)
    classifier.compile(keras.optimizers.Adam(learning_rate),
                  "binary_crossentropy", metrics=["accuracy"])
    mix_before = elmo.scalar_mix.scalar_weights.numpy().copy()
    # the texts are in a shuffled order already (above); Keras' own
    # shuffle is for arrays
    history = classifier.fit(train, epochs=epochs, verbose=2,
                             shuffle=False)
    test_loss, test_acc = classifier.evaluate(test, verbose=0)
    mix_after = elmo.scalar_mix.scalar_weights.numpy()
    return dict(
        loss=[float(x) for x in history.history["loss"]],
        train_accuracy=float(history.history["accuracy"][-1]),
        test_loss=float(test_loss),
        test_accuracy=float(test_acc),
        n_train=len(texts) - n_test,
        n_test=n_test,
        scalar_mix_before=mix_before.tolist(),
        scalar_mix_after=mix_after.tolist(),
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="A model name or folder (default: "
                        "bilm-tf's fixture model)")
    parser.add_argument("--text_file", help="One sentence per line "
                        "(default: bilm-tf's fixture text)")
    parser.add_argument("--max_sentences", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--learning_rate", type=float, default=0.01)
    args = parser.parse_args(argv)

    sentences = read_sentences(args.text_file)[: args.max_sentences]
    texts, labels = labelled_set(sentences)
    model = args.model or os.path.join(fixtures_root(), "model")
    result = run(model=model, texts=texts, labels=labels,
                 epochs=args.epochs, batch_size=args.batch_size,
                 learning_rate=args.learning_rate)
    print(f"test accuracy {result['test_accuracy']:.3f} on "
          f"{result['n_test']} sentences")
    print("RESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
