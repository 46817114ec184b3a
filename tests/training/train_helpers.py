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
