"""Tiny configurations for the training tests (bilm-tf's own test sizes)."""

from bilm_keras.options import BiLMOptions


def fixture_options(bidirectional=True, use_chars=False, share=False,
                    skip=False, **changes) -> BiLMOptions:
    """bilm-tf ``tests/test_training.py``'s options."""
    d = {
        "n_negative_samples_batch": 16,
        "n_train_tokens": 134,
        "batch_size": 2,
        "unroll_steps": 10,
        "n_epochs": 50,
        "all_clip_norm_val": 1.0,
        "dropout": 0.1,
        "lstm": {"dim": 16, "projection_dim": 8, "n_layers": 2,
                 "use_skip_connections": skip},
        "bidirectional": bidirectional,
    }
    if use_chars:
        d["char_cnn"] = {
            "n_characters": 261,
            "max_characters_per_token": 10,
            "filters": [[1, 8], [2, 8], [3, 16], [4, 32], [5, 64]],
            "activation": "tanh",
            "embedding": {"dim": 4},
            "n_highway": 1,
        }
    if share:
        d["share_embedding_softmax"] = True
    d.update(changes)
    return BiLMOptions.from_dict(d, source="<test options>")


def training_run(train_dir, options, *, sparse_gradients=True,
                 dropout_seed=None, **model_kwargs):
    """``(lm, train_step, batches, states)`` on the fixture corpus, seeded
    (model, softmax sampler and data: seed 0) for a step-by-step run."""
    import keras
    import tensorflow as tf

    from bilm_keras.data.lm_dataset import make_tf_dataset
    from bilm_keras.training.inputs import load_vocab, make_dataset
    from bilm_keras.training.model_setup import build_model
    from bilm_keras.training.train_step import make_train_step

    keras.utils.set_random_seed(0)
    vocab = load_vocab(str(train_dir / "vocab.txt"), options)
    options = options.replace(n_tokens_vocab=vocab.size)
    lm, optimizer = build_model(options, seed=0, **model_kwargs)
    step = make_train_step(
        lm, optimizer, tf.distribute.get_strategy(), options,
        sparse_gradients=sparse_gradients, dropout_seed=dropout_seed)
    data = make_dataset(str(train_dir / "data.txt"), vocab, options, seed=0)
    batches = iter(make_tf_dataset(data, options.batch_size,
                                   options.unroll_steps))
    return lm, step, batches, lm.zero_states(options.batch_size)
