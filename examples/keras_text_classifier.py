"""Sentence classifier on the exported ELMo: sentence -> ``default`` ->
Dense -> sigmoid, trained with ``model.fit`` (the old TF-Hub pattern,
``hub.Module(".../elmo/2")`` + Dense, on today's Keras).

The task is built offline from bilm-tf's fixture text: real sentences
(label 1) against the same words shuffled (label 0). Bag-of-words
features cannot tell them apart; ELMo's LSTM layers see word order. With
bilm-tf's toy fixture model (16-d projections) and ~70 examples the head
fits the training set but held-out accuracy stays near chance: the point
here is the wiring; give a real model and more text for real numbers.

Usage::

    python examples/keras_text_classifier.py                  # fixture model
    python examples/keras_text_classifier.py --savedmodel DIR # an export
    python examples/keras_text_classifier.py --options_file O.json \\
        --weight_file W.hdf5 --text_file sentences.txt --epochs 30

Without ``--savedmodel`` the model files are exported to a temporary
directory first (``bilm_keras.export.export_hub``). The last line printed
is ``RESULT {json}`` with the losses and accuracies.
"""

import argparse
import json
import os
import random
import sys
import tempfile

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


def build_classifier(savedmodel, hidden=64):
    import keras

    from bilm_keras.export.elmo_hub_layer import ELMoHubLayer

    text = keras.Input(shape=(), dtype="string", name="sentence")
    elmo = ELMoHubLayer(savedmodel, signature="default",
                        output_key="default", name="elmo")
    x = elmo(text)  # (batch, 2 * projection_dim)
    # a small biLM's vectors are small (the fixture's: std ~0.01 per
    # feature); standardising them lets the head learn at a normal rate
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Dense(hidden, activation="relu")(x)
    prob = keras.layers.Dense(1, activation="sigmoid")(x)
    return keras.Model(text, prob), elmo


def run(*, savedmodel, texts, labels, epochs, batch_size, learning_rate,
        test_fraction=0.25, seed=0):
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    n_test = max(1, int(len(texts) * test_fraction))
    train = tf.data.Dataset.from_tensor_slices(
        (tf.constant(texts[n_test:]), labels[n_test:])).batch(batch_size)
    test = tf.data.Dataset.from_tensor_slices(
        (tf.constant(texts[:n_test]), labels[:n_test])).batch(batch_size)
    model, elmo = build_classifier(savedmodel)
    model.compile(keras.optimizers.Adam(learning_rate),
                  "binary_crossentropy", metrics=["accuracy"])
    mix_before = elmo._module.trainable_variables[0].numpy().copy()
    # the texts are in a shuffled order already (above); Keras' own
    # shuffle is for arrays
    history = model.fit(train, epochs=epochs, verbose=2, shuffle=False)
    test_loss, test_acc = model.evaluate(test, verbose=0)
    mix_after = elmo._module.trainable_variables[0].numpy()
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
    parser.add_argument("--savedmodel", help="An export_hub directory")
    parser.add_argument("--options_file", help="default: fixture model")
    parser.add_argument("--weight_file", help="default: fixture model")
    parser.add_argument("--text_file", help="One sentence per line "
                        "(default: bilm-tf's fixture text)")
    parser.add_argument("--max_sentences", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--learning_rate", type=float, default=0.01)
    args = parser.parse_args(argv)

    sentences = read_sentences(args.text_file)[: args.max_sentences]
    texts, labels = labelled_set(sentences)
    with tempfile.TemporaryDirectory(prefix="elmo_export_") as tmp:
        savedmodel = args.savedmodel
        if savedmodel is None:
            from bilm_keras.export import export_hub

            model_dir = os.path.join(fixtures_root(), "model")
            savedmodel = export_hub(
                options_file=args.options_file
                or os.path.join(model_dir, "options.json"),
                weight_file=args.weight_file
                or os.path.join(model_dir, "lm_weights.hdf5"),
                outdir=os.path.join(tmp, "elmo"),
            )
        result = run(savedmodel=savedmodel, texts=texts, labels=labels,
                     epochs=args.epochs, batch_size=args.batch_size,
                     learning_rate=args.learning_rate)
    print(f"test accuracy {result['test_accuracy']:.3f} on "
          f"{result['n_test']} sentences")
    print("RESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
