"""bilm-tf's three usage scripts, run as bilm-tf wrote them.

The functions ``bilm_tf_usage_character``, ``bilm_tf_usage_token`` and
``bilm_tf_usage_cached`` hold the text of bilm-tf's top-level
``usage_character.py``, ``usage_token.py`` and ``usage_cached.py``
(https://github.com/allenai/bilm-tf, same paths), run on the shared fixture
model. What was changed, and why:

* The import line: ``from bilm_keras import ...`` for ``from bilm import
  ...`` (the same names).
* Each script is a function returning its variables (``locals()``), and a
  few long lines are wrapped at 80 columns. It runs in ``tmp_path``
  (``monkeypatch.chdir``), where ``tests/fixtures/model`` links to the
  fixture model, so bilm-tf's relative paths are kept as written
  (``os.path.join('tests', 'fixtures', 'model')``, ``vocab_small.txt``,
  ``elmo_token_embeddings.hdf5``, ``dataset_file.txt``,
  ``elmo_embeddings.hdf5``) and every file written lands in ``tmp_path``.
* Untouched: the sentences and their tokenization, the vocabulary written
  by ``usage_token.py`` (a set of ``<S>``, ``</S>`` and the tokens, no
  ``<UNK>``, no final newline), and every call of the library with bilm-tf's
  arguments: ``Batcher(vocab_file, 50)``, ``TokenBatcher(vocab_file)``,
  ``batch_sentences``, ``dump_token_embeddings(vocab_file, options_file,
  weight_file, token_embedding_file)``, ``dump_bilm_embeddings(vocab_file,
  dataset_file, options_file, weight_file, embedding_file)``,
  ``BidirectionalLanguageModel(options_file, weight_file[,
  use_character_inputs=False, embedding_weight_file=...])``,
  ``weight_layers('input'|'output', ops, l2_coef=0.0)`` and the ``h5py``
  read of ``usage_cached.py``.
* The TF1 graph and session lines, kept as ``# TF1:`` comments. Our API
  cannot be driven by ``tf.compat.v1`` placeholders: ``tf.placeholder``
  fails under eager execution; inside a ``tf.Graph``, calling a model built
  eagerly on a placeholder fails ("Attempting to capture an EagerTensor
  without building a function"), and a model built inside the graph runs
  but not with the weights it loaded. So, in place of
  ``sess.run(..., feed_dict={placeholder: ids})``, the biLM is called
  eagerly on the numpy ids the script's batcher made (the batching lines
  move from the session block to before the model calls, since eager calls
  need the ids), and ``weight_layers`` on its outputs; the ``*_`` results
  are the eager tensors' ``.numpy()``. ``with tf.variable_scope('',
  reuse=True)`` is gone: ``weight_layers`` shares the weights of a name
  (checked below). ``tf.reset_default_graph()`` and
  ``tf.global_variables_initializer()`` have nothing to do in TF2.

The checks: shapes; the character path's ELMo against the independent numpy
forward pass (``numpy_reference``); the token path (``TokenBatcher`` on the
vocabulary without ``<UNK>`` + dumped token embeddings) equal to the
character path to 1e-5; the cached HDF5 equal to the in-process embeddings.
"""

import json
import os

import h5py
import numpy as np
import pytest

import numpy_reference as nr
from bilm_keras import (
    Batcher,
    BidirectionalLanguageModel,
    TokenBatcher,
    dump_bilm_embeddings,
    dump_token_embeddings,
    weight_layers,
)
from bilm_keras.data import VocabularyError
from bilm_keras.layers.weight_layers import reset_weight_layers

ATOL = 1e-5


# ---------------------------------------------------------------------------
# bilm-tf usage_character.py (allenai/bilm-tf, /usage_character.py), adapted
# as the module docstring says.
# ---------------------------------------------------------------------------
def bilm_tf_usage_character():
    '''
    ELMo usage example with character inputs.

    Below, we show usage for SQuAD where each input example consists of both
    a question and a paragraph of context.
    '''

    # Location of pretrained LM.  Here we use the test fixtures.
    datadir = os.path.join('tests', 'fixtures', 'model')
    vocab_file = os.path.join(datadir, 'vocab_test.txt')
    options_file = os.path.join(datadir, 'options.json')
    weight_file = os.path.join(datadir, 'lm_weights.hdf5')

    # Create a Batcher to map text to character ids.
    batcher = Batcher(vocab_file, 50)

    # Input placeholders to the biLM.
    # TF1: context_character_ids = tf.placeholder('int32',
    # TF1:                                        shape=(None, None, 50))
    # TF1: question_character_ids = tf.placeholder('int32',
    # TF1:                                         shape=(None, None, 50))

    # Build the biLM graph.
    bilm = BidirectionalLanguageModel(options_file, weight_file)

    # Now we can compute embeddings.  (moved up: eager calls need the ids)
    raw_context = [
        'Pretrained biLMs compute representations useful for NLP tasks .',
        'They give state of the art performance for many tasks .'
    ]
    tokenized_context = [sentence.split() for sentence in raw_context]
    tokenized_question = [
        ['What', 'are', 'biLMs', 'useful', 'for', '?'],
    ]

    # Create batches of data.  (moved up from the session block)
    # NOTE: ensure your batch size < max_batch_size, default is 128
    context_ids = batcher.batch_sentences(tokenized_context)
    question_ids = batcher.batch_sentences(tokenized_question)

    # Get ops to compute the LM embeddings.
    # TF1: bilm(context_character_ids), bilm(question_character_ids)
    context_embeddings_op = bilm(context_ids)
    question_embeddings_op = bilm(question_ids)

    # Get an op to compute ELMo (weighted average of the internal biLM layers)
    # Our SQuAD model includes ELMo at both the input and output layers
    # of the task GRU, so we need 4x ELMo representations for the question
    # and context at each of the input and output.
    # We use the same ELMo weights for both the question and context
    # at each of the input and output.
    elmo_context_input = weight_layers(
        'input', context_embeddings_op, l2_coef=0.0)
    # TF1: with tf.variable_scope('', reuse=True):
    # the reuse=True scope reuses weights from the context for the question
    elmo_question_input = weight_layers(
        'input', question_embeddings_op, l2_coef=0.0
    )

    elmo_context_output = weight_layers(
        'output', context_embeddings_op, l2_coef=0.0
    )
    # TF1: with tf.variable_scope('', reuse=True):
    # the reuse=True scope reuses weights from the context for the question
    elmo_question_output = weight_layers(
        'output', question_embeddings_op, l2_coef=0.0
    )

    # TF1: with tf.Session() as sess:
    # It is necessary to initialize variables once before running inference.
    # TF1: sess.run(tf.global_variables_initializer())

    # Compute ELMo representations (here for the input only, for simplicity).
    # TF1: elmo_context_input_, elmo_question_input_ = sess.run(
    # TF1:     [elmo_context_input['weighted_op'],
    # TF1:      elmo_question_input['weighted_op']],
    # TF1:     feed_dict={context_character_ids: context_ids,
    # TF1:                question_character_ids: question_ids}
    # TF1: )
    elmo_context_input_, elmo_question_input_ = (
        elmo_context_input['weighted_op'].numpy(),
        elmo_question_input['weighted_op'].numpy(),
    )
    return locals()


# ---------------------------------------------------------------------------
# bilm-tf usage_token.py (allenai/bilm-tf, /usage_token.py), adapted as the
# module docstring says.
# ---------------------------------------------------------------------------
def bilm_tf_usage_token():
    '''
    ELMo usage example with pre-computed and cached context independent
    token representations

    Below, we show usage for SQuAD where each input example consists of both
    a question and a paragraph of context.
    '''

    # Our small dataset.
    raw_context = [
        'Pretrained biLMs compute representations useful for NLP tasks .',
        'They give state of the art performance for many tasks .'
    ]
    tokenized_context = [sentence.split() for sentence in raw_context]
    tokenized_question = [
        ['What', 'are', 'biLMs', 'useful', 'for', '?'],
    ]

    # Create the vocabulary file with all unique tokens and
    # the special <S>, </S> tokens (case sensitive).
    all_tokens = set(['<S>', '</S>'] + tokenized_question[0])
    for context_sentence in tokenized_context:
        for token in context_sentence:
            all_tokens.add(token)
    vocab_file = 'vocab_small.txt'
    with open(vocab_file, 'w') as fout:
        fout.write('\n'.join(all_tokens))

    # Location of pretrained LM.  Here we use the test fixtures.
    datadir = os.path.join('tests', 'fixtures', 'model')
    options_file = os.path.join(datadir, 'options.json')
    weight_file = os.path.join(datadir, 'lm_weights.hdf5')

    # Dump the token embeddings to a file. Run this once for your dataset.
    token_embedding_file = 'elmo_token_embeddings.hdf5'
    dump_token_embeddings(
        vocab_file, options_file, weight_file, token_embedding_file
    )
    # TF1: tf.reset_default_graph()

    ## Now we can do inference.
    # Create a TokenBatcher to map text to token ids.
    batcher = TokenBatcher(vocab_file)

    # Input placeholders to the biLM.
    # TF1: context_token_ids = tf.placeholder('int32', shape=(None, None))
    # TF1: question_token_ids = tf.placeholder('int32', shape=(None, None))

    # Build the biLM graph.
    bilm = BidirectionalLanguageModel(
        options_file,
        weight_file,
        use_character_inputs=False,
        embedding_weight_file=token_embedding_file
    )

    # Create batches of data.  (moved up from the session block)
    context_ids = batcher.batch_sentences(tokenized_context)
    question_ids = batcher.batch_sentences(tokenized_question)

    # Get ops to compute the LM embeddings.
    # TF1: bilm(context_token_ids), bilm(question_token_ids)
    context_embeddings_op = bilm(context_ids)
    question_embeddings_op = bilm(question_ids)

    # Get an op to compute ELMo (weighted average of the internal biLM layers)
    # Our SQuAD model includes ELMo at both the input and output layers
    # of the task GRU, so we need 4x ELMo representations for the question
    # and context at each of the input and output.
    # We use the same ELMo weights for both the question and context
    # at each of the input and output.
    elmo_context_input = weight_layers(
        'input', context_embeddings_op, l2_coef=0.0)
    # TF1: with tf.variable_scope('', reuse=True):
    # the reuse=True scope reuses weights from the context for the question
    elmo_question_input = weight_layers(
        'input', question_embeddings_op, l2_coef=0.0
    )

    elmo_context_output = weight_layers(
        'output', context_embeddings_op, l2_coef=0.0
    )
    # TF1: with tf.variable_scope('', reuse=True):
    # the reuse=True scope reuses weights from the context for the question
    elmo_question_output = weight_layers(
        'output', question_embeddings_op, l2_coef=0.0
    )

    # TF1: with tf.Session() as sess:
    # It is necessary to initialize variables once before running inference.
    # TF1: sess.run(tf.global_variables_initializer())

    # Compute ELMo representations (here for the input only, for simplicity).
    # TF1: elmo_context_input_, elmo_question_input_ = sess.run(
    # TF1:     [elmo_context_input['weighted_op'],
    # TF1:      elmo_question_input['weighted_op']],
    # TF1:     feed_dict={context_token_ids: context_ids,
    # TF1:                question_token_ids: question_ids}
    # TF1: )
    elmo_context_input_, elmo_question_input_ = (
        elmo_context_input['weighted_op'].numpy(),
        elmo_question_input['weighted_op'].numpy(),
    )
    return locals()


# ---------------------------------------------------------------------------
# bilm-tf usage_cached.py (allenai/bilm-tf, /usage_cached.py), adapted as the
# module docstring says (no TF1 code in it).
# ---------------------------------------------------------------------------
def bilm_tf_usage_cached():
    '''
    ELMo usage example to write biLM embeddings for an entire dataset to
    a file.
    '''

    # Our small dataset.
    raw_context = [
        'Pretrained biLMs compute representations useful for NLP tasks .',
        'They give state of the art performance for many tasks .'
    ]
    tokenized_context = [sentence.split() for sentence in raw_context]
    tokenized_question = [
        ['What', 'are', 'biLMs', 'useful', 'for', '?'],
    ]

    # Create the dataset file.
    dataset_file = 'dataset_file.txt'
    with open(dataset_file, 'w') as fout:
        for sentence in tokenized_context + tokenized_question:
            fout.write(' '.join(sentence) + '\n')

    # Location of pretrained LM.  Here we use the test fixtures.
    datadir = os.path.join('tests', 'fixtures', 'model')
    vocab_file = os.path.join(datadir, 'vocab_test.txt')
    options_file = os.path.join(datadir, 'options.json')
    weight_file = os.path.join(datadir, 'lm_weights.hdf5')

    # Dump the embeddings to a file. Run this once for your dataset.
    embedding_file = 'elmo_embeddings.hdf5'
    dump_bilm_embeddings(
        vocab_file, dataset_file, options_file, weight_file, embedding_file
    )

    # Load the embeddings from the file -- here the 2nd sentence.
    with h5py.File(embedding_file, 'r') as fin:
        second_sentence_embeddings = fin['1'][...]
    return locals()


# ---------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------
@pytest.fixture
def bilm_tf_cwd(model_dir, tmp_path, monkeypatch):
    """``tmp_path`` as the working directory, with bilm-tf's
    ``tests/fixtures/model`` linked to the fixture model."""
    (tmp_path / "tests" / "fixtures").mkdir(parents=True)
    (tmp_path / "tests" / "fixtures" / "model").symlink_to(
        model_dir.resolve(), target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    # each bilm-tf script ran in a fresh process, so fresh ELMo weights
    reset_weight_layers()
    yield tmp_path
    reset_weight_layers()


def _numpy_elmo(model_dir, sentences):
    """ELMo with the initial weights (w = 0, gamma = 1) and the biLM layers,
    from the independent numpy forward pass.

    Returns:
        ``(elmo (B, T, 2P), lm_embeddings (B, L + 1, T, 2P), lengths (B,))``.
    """
    options = json.loads((model_dir / "options.json").read_text())
    weights = nr.load_hdf5_weights(model_dir / "lm_weights.hdf5")
    ids = nr.sentence_char_ids(sentences, 50)
    result = nr.bilm_forward(weights, options, char_ids=ids)
    layers, lengths = nr.remove_bos_eos(result["layers"], result["lengths"])
    mask = np.arange(layers.shape[2])[None, :] < lengths[:, None]  # (B, T)
    elmo = nr.scalar_mix(layers, mask, np.zeros(layers.shape[1]), 1.0)
    return elmo, layers, lengths


@pytest.mark.slow
def test_usage_character_as_bilm_tf_wrote_it(bilm_tf_cwd, model_dir):
    ns = bilm_tf_usage_character()
    context, question = ns["elmo_context_input_"], ns["elmo_question_input_"]
    assert ns["context_ids"].shape == (2, 13, 50)
    assert ns["question_ids"].shape == (1, 8, 50)
    assert context.shape == (2, 11, 32)  # (batch, time, 2 * projection_dim)
    assert question.shape == (1, 6, 32)
    assert ns["elmo_context_output"]["weighted_op"].shape == (2, 11, 32)
    assert ns["elmo_question_output"]["weighted_op"].shape == (1, 6, 32)
    # bilm-tf's reuse=True scopes: the question shares the context's weights
    assert (ns["elmo_question_input"]["scalar_mix"]
            is ns["elmo_context_input"]["scalar_mix"])
    assert (ns["elmo_question_output"]["scalar_mix"]
            is ns["elmo_context_output"]["scalar_mix"])
    assert (ns["elmo_context_output"]["scalar_mix"]
            is not ns["elmo_context_input"]["scalar_mix"])
    # the numbers, from the independent numpy forward pass
    for got, sentences in ((context, ns["tokenized_context"]),
                           (question, ns["tokenized_question"])):
        expected, _, _ = _numpy_elmo(model_dir, sentences)
        np.testing.assert_allclose(got, expected, atol=ATOL, rtol=0)


@pytest.mark.slow
def test_usage_token_as_bilm_tf_wrote_it(bilm_tf_cwd):
    ns = bilm_tf_usage_token()
    lines = (bilm_tf_cwd / "vocab_small.txt").read_text().split("\n")
    assert "<UNK>" not in lines and {"<S>", "</S>"} <= set(lines)
    with h5py.File(bilm_tf_cwd / "elmo_token_embeddings.hdf5", "r") as fin:
        assert fin["embedding"].shape == (len(lines), 16)  # (V, P)
    assert ns["context_ids"].shape == (2, 13)
    assert ns["question_ids"].shape == (1, 8)
    assert ns["elmo_context_input_"].shape == (2, 11, 32)
    assert ns["elmo_question_input_"].shape == (1, 6, 32)
    assert (ns["elmo_question_input"]["scalar_mix"]
            is ns["elmo_context_input"]["scalar_mix"])

    # the same numbers as the character script gives for these sentences
    reset_weight_layers()
    chars = bilm_tf_usage_character()
    assert ns["tokenized_context"] == chars["tokenized_context"]
    assert ns["tokenized_question"] == chars["tokenized_question"]
    for name in ("elmo_context_input_", "elmo_question_input_"):
        np.testing.assert_allclose(ns[name], chars[name], atol=ATOL, rtol=0)
    for op in ("context_embeddings_op", "question_embeddings_op"):
        np.testing.assert_allclose(
            ns[op]["lm_embeddings"].numpy(),
            chars[op]["lm_embeddings"].numpy(), atol=ATOL, rtol=0)
        np.testing.assert_array_equal(ns[op]["lengths"].numpy(),
                                      chars[op]["lengths"].numpy())


@pytest.mark.slow
def test_usage_cached_as_bilm_tf_wrote_it(bilm_tf_cwd):
    ns = bilm_tf_usage_cached()
    # (n_lm_layers + 1, n_tokens, 2 * projection_dim)
    assert ns["second_sentence_embeddings"].shape == (3, 11, 32)

    # every cached sentence equals the in-process embeddings
    chars = bilm_tf_usage_character()
    in_process = [
        (ops["lm_embeddings"].numpy()[k, :, :n], n)
        for ops in (chars["context_embeddings_op"],
                    chars["question_embeddings_op"])
        for k, n in enumerate(ops["lengths"].numpy())
    ]
    with h5py.File(bilm_tf_cwd / "elmo_embeddings.hdf5", "r") as fin:
        # one dataset per line, and AllenNLP's sentence_to_index beside
        assert sorted(fin) == ["0", "1", "2", "sentence_to_index"]
        for key, (expected, n) in enumerate(in_process):
            cached = fin[str(key)][...]
            assert cached.shape == (3, n, 32)
            np.testing.assert_allclose(cached, expected, atol=ATOL, rtol=0)
    np.testing.assert_allclose(ns["second_sentence_embeddings"],
                               in_process[1][0], atol=ATOL, rtol=0)


@pytest.mark.slow  # over a second: the full suite's, not the quick tier's
def test_token_input_without_unk_names_a_missing_token(bilm_tf_cwd):
    ns = bilm_tf_usage_token()
    batcher, bilm, vocab_file = ns["batcher"], ns["bilm"], ns["vocab_file"]
    sentences = ns["tokenized_context"] + [["ELMo", "is", "useful", "."]]
    message = (r"vocab_small\.txt: token 'ELMo' \(sentences\[2\]\[0\]\) is "
               r"not in the vocabulary, which has no <UNK> to map it to; add "
               r"it or <UNK> \(1 other missing token: 'is'\)")
    with pytest.raises(VocabularyError, match=message):
        batcher.batch_sentences(sentences)
    # the bulk path names the caller's sentences[i][j] too
    with pytest.raises(VocabularyError, match=message):
        bilm.embed_sentences(sentences, vocab_file=vocab_file)

    # known tokens: the bulk path gives the script's numbers
    known = ns["tokenized_context"] + ns["tokenized_question"]
    got = bilm.embed_sentences(known, vocab_file=vocab_file)
    expected = [
        ops["lm_embeddings"].numpy()[k, :, :len(known[i])]
        for i, (ops, k) in enumerate([(ns["context_embeddings_op"], 0),
                                      (ns["context_embeddings_op"], 1),
                                      (ns["question_embeddings_op"], 0)])
    ]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, atol=ATOL, rtol=0)
