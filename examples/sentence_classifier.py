"""A sentence classifier on ELMo + bag of words, after PaddleNLP's
``examples/language_model/elmo/run_finetune.py``, in Keras 3.

The model, as upstream's ``ELMoBowTextClassification``: each sentence's
ELMo vectors averaged over its tokens (the bag of words), a linear layer,
dropout and a linear layer to one logit per label, trained with Adam on
the cross-entropy. One difference: upstream averages the biLM's top layer,
here the average is of the learned mix of all layers (``--trainable
none`` keeps the mix at its start, the layers' mean), and it is
standardised (``BatchNormalization``) before the first linear layer.

``--trainable`` says what trains besides the head: ``mix`` (the default:
the mix's weights and scale, TF-Hub's ``trainable=True``), ``all`` (the
biLM too, as upstream's ``trainable=True``) or ``none``.

The data are labelled TSV files, one sentence a line: ``LABEL<TAB>
SENTENCE``, the sentence's tokens separated by spaces. The labels are
those of ``--train``, and ``--test`` may use no other.

Beside ELMo's figure the script prints a words-only baseline (skip it
with ``--no_baseline``): the same head on the mean of the biLM's token
layer, the char-CNN's context-free vectors. On the fixture task, natural
or shuffled word order, the words alone stay at chance and ELMo does not
(docs/keras.md gives the figures). Its biLM is the README demo's::

    bilm-keras pipeline --out_dir runs/demo     # a tiny biLM, minutes
    python examples/sentence_classifier.py --model runs/demo/model \\
        --train tests/fixtures/stdlib_context/order_train.tsv \\
        --test tests/fixtures/stdlib_context/order_test.tsv
    python examples/sentence_classifier.py --model DIR --train T.tsv \\
        --test H.tsv --trainable all --epochs 5

``--model`` takes anything ``ELMoEmbedding.from_pretrained`` does: a
registry name, a folder with ``options.json`` and ``lm_weights.hdf5``, a
training save_dir. The last line printed is ``RESULT {json}``: the losses,
the held-out accuracy, the mix's weights before and after, and the
baseline's figures under ``words_only``.
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINABLE = {"mix": "mix", "all": "all", "none": False}


def fixture_model():
    """bilm-tf's small test model (``$BILM_FIXTURES/model``)."""
    return os.path.join(os.environ.get("BILM_FIXTURES", os.path.join(
        HERE, "..", "tests", "fixtures", "bilm-tf")), "model")


def read_tsv(path, labels=None):
    """``(sentences, label names)`` of a ``LABEL<TAB>SENTENCE`` file.

    Raises:
        ValueError: a line without exactly two tab-separated fields, an
            empty sentence, or a label not in ``labels``, naming the file
            and line.
    """
    sentences, names = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 2 or not fields[1].split():
                raise ValueError(
                    f"{path}, line {number}: expected LABEL<TAB>SENTENCE, "
                    f"found {len(fields)} field(s): {line[:60]!r}")
            label, sentence = fields[0].strip(), " ".join(fields[1].split())
            if labels is not None and label not in labels:
                raise ValueError(
                    f"{path}, line {number}: label {label!r} is not one of "
                    f"the training labels {sorted(labels)}")
            sentences.append(sentence)
            names.append(label)
    if not sentences:
        raise ValueError(f"{path}: expected labelled sentences, found none")
    return sentences, names


def token_layer(layers):
    """The biLM's token layer, its char-CNN vectors, out of ``output=
    "layers"``'s `(batch, L + 1, time, dim)`: `(batch, time, dim)`, masked
    past each sentence's end (where it is zero)."""
    import keras

    tokens = keras.layers.Lambda(lambda x: x[:, 0],
                                 name="token_layer")(layers)
    return keras.layers.Masking(0.0, name="token_mask")(tokens)


def build_classifier(elmo, n_labels, sent_embedding_dim, dropout):
    """Sentence -> masked mean of the mix -> standardised -> linear ->
    dropout -> logits. With an ``elmo`` of ``output="layers"`` the mean
    is of the token layer alone: the words-only baseline."""
    import keras

    text = keras.Input(shape=(), dtype="string", name="sentence")
    if elmo.output_mode == "layers":  # (batch, time, dim) -> (batch, dim)
        x = keras.layers.GlobalAveragePooling1D(name="bag_of_words")(
            token_layer(elmo(text)))
    else:
        x = elmo(text)  # (batch, 2 * projection_dim), the bag of words
    # averaged vectors differ between sentences by a few percent of their
    # size (1 % for bilm-tf's test model): standardised, the head learns
    # at a normal rate
    x = keras.layers.BatchNormalization(name="standardize")(x)
    x = keras.layers.Dense(sent_embedding_dim, name="fc1")(x)
    x = keras.layers.Dropout(dropout)(x)
    logits = keras.layers.Dense(n_labels, name="fc2")(x)  # (batch, labels)
    return keras.Model(text, logits)


def mix_weights(elmo):
    """The mix's softmax weights and its scale gamma, as lists."""
    mix = elmo.scalar_mix
    return dict(weights=[round(float(w), 4)
                         for w in mix.normalized_weights().numpy()],
                gamma=round(float(mix.gamma.numpy()[0]), 4))


def run(*, model, train_file, test_file, trainable, epochs, batch_size,
        learning_rate, sent_embedding_dim, dropout, layer_norm=False,
        words_only=False, seed=0):
    """Trains the classifier and scores it on ``test_file``. With
    ``words_only`` the head reads the biLM's token layer alone, the
    context-free vectors of its char-CNN (trained with ``trainable=
    "all"``, frozen otherwise): the baseline."""
    import keras
    import tensorflow as tf

    from bilm_keras import ELMoEmbedding

    keras.utils.set_random_seed(seed)
    train_text, train_names = read_tsv(train_file)
    labels = sorted(set(train_names))
    test_text, test_names = read_tsv(test_file, labels=set(labels))
    train_y = np.array([labels.index(n) for n in train_names], np.int32)
    test_y = np.array([labels.index(n) for n in test_names], np.int32)
    if words_only:
        elmo = ELMoEmbedding.from_pretrained(
            model, output="layers",
            trainable="all" if trainable == "all" else False)
    else:
        elmo = ELMoEmbedding.from_pretrained(
            model, output="sentence", trainable=TRAINABLE[trainable],
            layer_norm=layer_norm)
    classifier = build_classifier(elmo, len(labels), sent_embedding_dim,
                                  dropout)
    classifier.compile(
        keras.optimizers.Adam(learning_rate),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"])
    mix_before = mix_weights(elmo)
    # shuffled, then batched with sentences of about their length: the
    # biLM's steps follow the longest sentence of a batch
    longest = max(len(t.split()) for t in train_text)
    boundaries = list(range(8, longest + 1, 8))
    train = tf.data.Dataset.from_tensor_slices(
        (tf.constant(train_text), train_y)).shuffle(
            len(train_text), seed=seed).bucket_by_sequence_length(
                lambda text, _: tf.size(tf.strings.split(text)), boundaries,
                [batch_size] * (len(boundaries) + 1))
    # the dataset shuffles itself (above); Keras' own shuffle is for arrays
    history = classifier.fit(train, epochs=epochs, verbose=2, shuffle=False)
    test = tf.data.Dataset.from_tensor_slices(
        (tf.constant(test_text), test_y)).batch(batch_size)
    test_loss, test_accuracy = classifier.evaluate(test, verbose=0)
    return dict(
        loss=[round(float(x), 5) for x in history.history["loss"]],
        train_accuracy=float(history.history["accuracy"][-1]),
        test_loss=float(test_loss),
        test_accuracy=float(test_accuracy),
        labels=labels,
        n_train=len(train_text),
        n_test=len(test_text),
        trainable=trainable,
        trainable_weights=int(sum(
            np.prod(w.shape) for w in elmo.trainable_weights)),
        mix_before=mix_before,
        mix_after=mix_weights(elmo),
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None,
                        help="the biLM: a name, a model folder or a "
                        "training save_dir (default: bilm-tf's test model)")
    parser.add_argument("--train", required=True,
                        help="labelled TSV: LABEL<TAB>SENTENCE a line")
    parser.add_argument("--test", required=True,
                        help="held-out TSV in the same format")
    parser.add_argument("--trainable", choices=sorted(TRAINABLE),
                        default="mix", help="what of ELMo trains "
                        "(default: mix)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--sent_embedding_dim", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--layer_norm", action="store_true",
                        help="normalise each biLM layer before the mix "
                        "(a small biLM's vectors are small)")
    parser.add_argument("--no_baseline", action="store_true",
                        help="skip the words-only baseline: the same head "
                        "on the biLM's token layer alone")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    settings = dict(model=args.model or fixture_model(),
                    train_file=args.train, test_file=args.test,
                    trainable=args.trainable, epochs=args.epochs,
                    batch_size=args.batch_size,
                    learning_rate=args.learning_rate,
                    sent_embedding_dim=args.sent_embedding_dim,
                    dropout=args.dropout, layer_norm=args.layer_norm,
                    seed=args.seed)
    result = run(**settings)
    if not args.no_baseline:
        result["words_only"] = run(**settings, words_only=True)
    print(f"test accuracy {result['test_accuracy']:.3f} on "
          f"{result['n_test']} sentences with ELMo")
    if not args.no_baseline:
        print(f"test accuracy {result['words_only']['test_accuracy']:.3f} "
              "with the words only (the biLM's context-free token layer)")
    print("RESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
