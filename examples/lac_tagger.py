"""A sequence tagger on ELMo concatenated with word embeddings, after
PaddlePaddle's ELMo LAC demo (``PaddleNLP/pretrain_language_models/ELMo/
LAC_demo/network.py``), in Keras 3.

The network, as upstream's ``lex_net``: the learned mix of the biLM's
layers (with an L2 on its weights, upstream's ``elmo_l2_coef``)
concatenated with the task's own word embeddings, ``--bigru_num`` stacked
bidirectional GRUs (upstream: 2), and a linear layer to one score per
tag. With ``--crf`` the scores feed a linear-chain CRF as upstream's
(``linear_chain_crf``: start, end and tag-to-tag transitions, trained on
the sentence's negative log-likelihood, decoded by Viterbi). Without it,
the default, each token's tag is a softmax over its scores, trained on
the cross-entropy (Keras 3 has no CRF layer: the one here is this file's
own). The ELMo layer's mask reaches the GRUs, so they skip the padding,
and the loss skips it too.

The data are CoNLL-style columns: one token a line, its first column the
token and its last the tag (BIO: ``B-TYPE`` starts a span, ``I-TYPE``
continues it, ``O`` is outside), a blank line between sentences. The
result is span F1 on ``--test``, as ``conlleval`` counts it: a span is
right when its type, start and end all are.

Beside ELMo's figure the script prints a words-only baseline (skip it
with ``--no_baseline``): the same tagger with the biLM's token layer, the
char-CNN's context-free vectors, in the mix's place. The fixture task
finds the two tokens of each sentence replaced by common words drawn at
random (``B-ODD``), as ELECTRA's replaced-token detection: only their
neighbours give them away. docs/keras.md gives the figures, with the
README demo's biLM::

    bilm-keras pipeline --out_dir runs/demo     # a tiny biLM, minutes
    python examples/lac_tagger.py --model runs/demo/model \\
        --train tests/fixtures/stdlib_context/odd_train.conll \\
        --test tests/fixtures/stdlib_context/odd_test.conll \\
        --word_emb_dim 16 --grnn_hidden_dim 32 --bigru_num 1 \\
        --learning_rate 0.005
    python examples/lac_tagger.py --model DIR --train T.conll \\
        --test H.conll --epochs 10 --crf

``--model`` takes anything ``ELMoEmbedding.from_pretrained`` does. The last
line printed is ``RESULT {json}``: the losses, the held-out span
precision, recall and F1, the mix's weights, and the baseline's figures
under ``words_only``.
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def fixture_model():
    """bilm-tf's small test model (``$BILM_FIXTURES/model``)."""
    return os.path.join(os.environ.get("BILM_FIXTURES", os.path.join(
        HERE, "..", "tests", "fixtures", "bilm-tf")), "model")


def read_conll(path):
    """``(sentences, tags)``: lists of token lists and tag lists.

    Raises:
        ValueError: a line with fewer than two columns, or no sentence,
            naming the file and line.
    """
    sentences, tags, tokens, labels = [], [], [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            columns = line.split()
            if not columns or columns[0] == "-DOCSTART-":
                if tokens:
                    sentences.append(tokens)
                    tags.append(labels)
                tokens, labels = [], []
                continue
            if len(columns) < 2:
                raise ValueError(
                    f"{path}, line {number}: expected TOKEN ... TAG "
                    f"columns, found {len(columns)}: {line.strip()[:60]!r}")
            tokens.append(columns[0])
            labels.append(columns[-1])
    if tokens:
        sentences.append(tokens)
        tags.append(labels)
    if not sentences:
        raise ValueError(f"{path}: expected CoNLL sentences, found none")
    return sentences, tags


def spans(tags):
    """The set of ``(type, start, end)`` spans of one sentence's BIO tags,
    end exclusive: an ``I-`` tag that does not continue a span of its
    type starts one, as ``conlleval`` reads it."""
    found, start, kind = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, tag_kind = tag.partition("-")
        continues = prefix == "I" and tag_kind == kind
        if start is not None and not continues:
            found.add((kind, start, i))
            start = kind = None
        if prefix in ("B", "I") and not continues:
            start, kind = i, tag_kind
    return found


def span_f1(gold, predicted):
    """Span precision, recall and F1 over sentences of BIO tags."""
    n_gold = n_predicted = n_right = 0
    for g, p in zip(gold, predicted):
        gold_spans, predicted_spans = spans(g), spans(p)
        n_gold += len(gold_spans)
        n_predicted += len(predicted_spans)
        n_right += len(gold_spans & predicted_spans)
    precision = n_right / n_predicted if n_predicted else 0.0
    recall = n_right / n_gold if n_gold else 0.0
    f1 = (2 * precision * recall / (precision + recall)
          if precision + recall else 0.0)
    return dict(precision=precision, recall=recall, f1=f1,
                gold_spans=n_gold, predicted_spans=n_predicted)


def crf_log_likelihood(emissions, tags, lengths, transitions):
    """Each sentence's log-probability of its tags under a linear-chain
    CRF, as Paddle's ``linear_chain_crf``: a path's score is
    ``start[y_0] + sum_t emissions[t, y_t] + sum_t T[y_t-1, y_t] +
    end[y_last]``, normalised over every path by the forward algorithm.

    Args:
        emissions: float tensor. `(batch, time, tags)` scores.
        tags: int tensor. `(batch, time)` gold tag ids.
        lengths: int tensor. `(batch,)` tokens in each sentence, >= 1.
        transitions: float tensor. `(tags + 2, tags)`: the start row, the
            end row, then ``T``, Paddle's layout.

    Returns:
        `(batch,)` float tensor.
    """
    import tensorflow as tf

    start, end, trans = transitions[0], transitions[1], transitions[2:]
    n_tags = tf.shape(emissions)[2]
    mask = tf.sequence_mask(lengths, tf.shape(emissions)[1],
                            emissions.dtype)  # (B, T)
    # the gold path's score
    one_hot = tf.one_hot(tags, n_tags, dtype=emissions.dtype)  # (B, T, K)
    unary = tf.reduce_sum(emissions * one_hot, axis=2) * mask  # (B, T)
    pair = tf.gather_nd(trans, tf.stack([tags[:, :-1], tags[:, 1:]],
                                        axis=-1))  # (B, T - 1)
    last = tf.gather(tags, lengths - 1, batch_dims=1)  # (B,)
    gold = (tf.reduce_sum(unary, 1) + tf.reduce_sum(pair * mask[:, 1:], 1)
            + tf.gather(start, tags[:, 0]) + tf.gather(end, last))
    # every path's: the forward algorithm, a padded step keeps alpha
    alpha = start[None] + emissions[:, 0]  # (B, K)

    def step(alpha, inputs):
        emission, keep = inputs  # (B, K), (B,)
        new = tf.reduce_logsumexp(alpha[:, :, None] + trans[None], axis=1)
        return tf.where(keep[:, None] > 0, new + emission, alpha)

    alpha = tf.foldl(step, (tf.transpose(emissions[:, 1:], [1, 0, 2]),
                            tf.transpose(mask[:, 1:])),
                     initializer=alpha)  # (B, K)
    return gold - tf.reduce_logsumexp(alpha + end[None], axis=1)


def viterbi(emissions, transitions):
    """The best tag path of one sentence under the CRF: `(time, tags)`
    scores and `(tags + 2, tags)` transitions give `(time,)` tag ids."""
    start, end, trans = transitions[0], transitions[1], transitions[2:]
    score = start + emissions[0]  # (K,)
    back = []
    for emission in emissions[1:]:
        total = score[:, None] + trans  # (K previous, K next)
        back.append(total.argmax(0))
        score = total.max(0) + emission
    path = [int((score + end).argmax())]
    for pointers in reversed(back):
        path.append(int(pointers[path[-1]]))
    return np.array(path[::-1])


def crf_layer(n_tags):
    """A Keras layer holding the CRF's transitions, Paddle's
    `(tags + 2, tags)`: it takes ``[emissions, tag ids, tokens]``, adds
    the batch's mean negative log-likelihood to the model's losses and
    returns the emissions."""
    import keras
    import tensorflow as tf

    class CRFLoss(keras.layers.Layer):
        def build(self, input_shape=None):
            self.transitions = self.add_weight(
                name="transitions", shape=(n_tags + 2, n_tags),
                initializer=keras.initializers.RandomUniform(-0.1, 0.1))

        def call(self, inputs, mask=None):
            # the lengths come from the tokens, the mask is not needed
            emissions, tags, tokens = inputs
            lengths = tf.reduce_sum(
                tf.cast(tf.not_equal(tokens, ""), tf.int32), axis=1)
            self.add_loss(-tf.reduce_mean(crf_log_likelihood(
                emissions, tf.cast(tags, tf.int32), tf.maximum(lengths, 1),
                self.transitions)))
            return emissions

        def compute_mask(self, inputs, mask=None):
            return None

    return CRFLoss(name="crf")


def pad(sentences, tags, tag_names):
    """Token matrix padded with ``""`` and tag ids padded with 0."""
    width = max(len(s) for s in sentences)
    tokens = np.array([s + [""] * (width - len(s)) for s in sentences])
    ids = np.zeros((len(sentences), width), np.int32)
    for row, labels in enumerate(tags):
        ids[row, :len(labels)] = [tag_names.index(t) for t in labels]
    return tokens, ids


def length_batches(sentences, tags, tag_names, batch_size, seed, *,
                   as_dict=False):
    """The sentences shuffled, then batched with others of about their
    length by ``tf.data``'s ``bucket_by_sequence_length``, each batch
    padded to its longest sentence: the biLM's steps follow the longest
    sentence of a batch, so a batch of similar lengths trains faster.

    Returns:
        A ``tf.data.Dataset`` of ``(tokens (B, T) string, tag ids (B, T))``
        batches, or ``{"tokens", "tags"}`` with ``as_dict``.
    """
    import tensorflow as tf

    ids = [[tag_names.index(t) for t in labels] for labels in tags]
    dataset = tf.data.Dataset.from_generator(
        lambda: zip(sentences, ids),
        output_signature=(tf.TensorSpec((None,), tf.string),
                          tf.TensorSpec((None,), tf.int32)))
    if as_dict:
        dataset = dataset.map(lambda tokens, tag_ids: {"tokens": tokens,
                                                       "tags": tag_ids})

    def length(*element):
        tokens = element[0]["tokens"] if as_dict else element[0]
        return tf.shape(tokens)[0]

    longest = max(len(s) for s in sentences)
    boundaries = list(range(8, longest + 1, 8))  # buckets 8 tokens wide
    dataset = dataset.shuffle(len(sentences), seed=seed)
    return dataset.bucket_by_sequence_length(
        length, boundaries, [batch_size] * (len(boundaries) + 1))


def token_layer(layers):
    """The biLM's token layer, its char-CNN vectors, out of ``output=
    "layers"``'s `(batch, L + 1, time, dim)`: `(batch, time, dim)`, masked
    past each sentence's end (where it is zero)."""
    import keras

    tokens = keras.layers.Lambda(lambda x: x[:, 0],
                                 name="token_layer")(layers)
    return keras.layers.Masking(0.0, name="token_mask")(tokens)


def build_tagger(elmo, vocabulary, n_tags, *, word_emb_dim,
                 grnn_hidden_dim, bigru_num, crf=False):
    """Tokens -> [ELMo mix ; word embeddings] -> stacked BiGRUs ->
    per-token tag scores. With an ``elmo`` of ``output="layers"`` the
    biLM's token layer takes the mix's place: the words-only baseline.

    Returns:
        ``(trainer, scorer, crf layer or None)``. Without ``crf`` both
        models are one, tokens to tag probabilities. With it the trainer
        takes ``{"tokens", "tags"}`` and carries the CRF's loss, and the
        scorer gives the emissions that :func:`viterbi` decodes.
    """
    import keras

    tokens = keras.Input(shape=(None,), dtype="string", name="tokens")
    if elmo.output_mode == "layers":  # the words-only baseline
        elmo_vectors = token_layer(elmo(tokens))  # (B, T, 2P), masked
    else:
        elmo_vectors = elmo(tokens)  # (B, T, 2P), masked past each end
    ids = keras.layers.StringLookup(vocabulary=vocabulary,
                                    name="word_ids")(tokens)  # (B, T)
    words = keras.layers.Embedding(len(vocabulary) + 1, word_emb_dim,
                                   name="word_emb")(ids)  # (B, T, E)
    x = keras.layers.Concatenate()([elmo_vectors, words])  # (B, T, 2P + E)
    for i in range(bigru_num):
        x = keras.layers.Bidirectional(
            keras.layers.GRU(grnn_hidden_dim, return_sequences=True),
            name=f"bigru_{i}")(x)  # (B, T, 2H)
    if not crf:
        probs = keras.layers.Dense(n_tags, activation="softmax",
                                   name="emission")(x)  # (B, T, tags)
        model = keras.Model(tokens, probs)
        return model, model, None
    emissions = keras.layers.Dense(n_tags, name="emission")(x)  # (B, T, K)
    tags = keras.Input(shape=(None,), dtype="int32", name="tags")
    layer = crf_layer(n_tags)
    trainer = keras.Model({"tokens": tokens, "tags": tags},
                          layer([emissions, tags, tokens]))
    return trainer, keras.Model(tokens, emissions), layer


def run(*, model, train_file, test_file, epochs, batch_size,
        learning_rate, word_emb_dim, grnn_hidden_dim, bigru_num,
        elmo_l2_coef, crf=False, max_sentences=None, words_only=False,
        seed=0):
    """Trains the tagger and scores it on ``test_file``. With
    ``words_only`` the biLM's token layer, the context-free vectors of
    its char-CNN, takes the mix's place: the baseline."""
    import keras
    import tensorflow as tf

    from bilm_keras import ELMoEmbedding

    keras.utils.set_random_seed(seed)
    train_sentences, train_tags = read_conll(train_file)
    test_sentences, test_tags = read_conll(test_file)
    train_sentences = train_sentences[:max_sentences]
    train_tags = train_tags[:max_sentences]
    tag_names = ["O"] + sorted({t for s in train_tags for t in s} - {"O"})
    unknown = {t for s in test_tags for t in s} - set(tag_names)
    if unknown:
        raise ValueError(f"{test_file}: tags {sorted(unknown)} are not in "
                         f"{train_file}'s {tag_names}")
    vocabulary = sorted({w for s in train_sentences for w in s})
    if words_only:
        elmo = ELMoEmbedding.from_pretrained(model, output="layers",
                                             trainable=False)
    else:
        elmo = ELMoEmbedding.from_pretrained(model, output="mix",
                                             trainable="mix",
                                             l2_coef=elmo_l2_coef)
    tagger, scorer, crf_weights = build_tagger(
        elmo, vocabulary, len(tag_names), word_emb_dim=word_emb_dim,
        grnn_hidden_dim=grnn_hidden_dim, bigru_num=bigru_num, crf=crf)
    train = length_batches(train_sentences, train_tags, tag_names,
                           batch_size, seed, as_dict=crf)
    if crf:  # the loss is the CRF layer's own
        tagger.compile(keras.optimizers.Adam(learning_rate))
    else:
        tagger.compile(keras.optimizers.Adam(learning_rate),
                       "sparse_categorical_crossentropy")
    # the dataset shuffles itself (above); Keras' own shuffle is for arrays
    history = tagger.fit(train, epochs=epochs, verbose=2, shuffle=False)
    test_tokens, _ = pad(test_sentences, test_tags, tag_names)
    scores = scorer.predict(tf.constant(test_tokens), batch_size=batch_size,
                            verbose=0)  # (N, T, tags)
    if crf:
        transitions = crf_weights.transitions.numpy()
        best = [viterbi(row[:len(s)], transitions)
                for row, s in zip(scores, test_sentences)]
    else:
        best = [row[:len(s)].argmax(-1)
                for row, s in zip(scores, test_sentences)]
    predicted = [[tag_names[k] for k in row] for row in best]
    mix = elmo.scalar_mix
    return dict(
        loss=[round(float(x), 5) for x in history.history["loss"]],
        test=span_f1(test_tags, predicted),
        crf=crf,
        tags=tag_names,
        n_train=len(train_sentences),
        n_test=len(test_sentences),
        mix_weights=[round(float(w), 4)
                     for w in mix.normalized_weights().numpy()],
        mix_gamma=round(float(mix.gamma.numpy()[0]), 4),
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None,
                        help="the biLM: a name, a model folder or a "
                        "training save_dir (default: bilm-tf's test model)")
    parser.add_argument("--train", required=True,
                        help="CoNLL columns: TOKEN ... TAG a line")
    parser.add_argument("--test", required=True,
                        help="held-out CoNLL file, scored by span F1")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--word_emb_dim", type=int, default=128)
    parser.add_argument("--grnn_hidden_dim", type=int, default=128)
    parser.add_argument("--bigru_num", type=int, default=2)
    parser.add_argument("--elmo_l2_coef", type=float, default=1e-3)
    parser.add_argument("--crf", action="store_true",
                        help="a linear-chain CRF on the tag scores, as "
                        "upstream (default: a softmax per token)")
    parser.add_argument("--max_sentences", type=int, default=None,
                        help="train on the first N sentences only")
    parser.add_argument("--no_baseline", action="store_true",
                        help="skip the words-only baseline: the same "
                        "tagger with the biLM's token layer in the mix's "
                        "place")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.bigru_num < 1:
        parser.error(f"--bigru_num: expected an integer >= 1, found "
                     f"{args.bigru_num}")
    settings = dict(model=args.model or fixture_model(),
                    train_file=args.train, test_file=args.test,
                    epochs=args.epochs, batch_size=args.batch_size,
                    learning_rate=args.learning_rate,
                    word_emb_dim=args.word_emb_dim,
                    grnn_hidden_dim=args.grnn_hidden_dim,
                    bigru_num=args.bigru_num,
                    elmo_l2_coef=args.elmo_l2_coef, crf=args.crf,
                    max_sentences=args.max_sentences, seed=args.seed)
    result = run(**settings)
    if not args.no_baseline:
        result["words_only"] = run(**settings, words_only=True)
    print(f"span F1 {result['test']['f1']:.3f} on {result['n_test']} "
          "held-out sentences with ELMo")
    if not args.no_baseline:
        print(f"span F1 {result['words_only']['test']['f1']:.3f} with the "
              "words only (the biLM's context-free token layer)")
    print("RESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
