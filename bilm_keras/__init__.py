"""bilm_keras: ELMo's bidirectional language model on TensorFlow 2 / Keras 3.

The public API mirrors bilm-tf's, so its usage code keeps working::

    from bilm_keras import Batcher, BidirectionalLanguageModel, weight_layers

and a published model by name (downloaded and cached on first use)::

    from bilm_keras import BidirectionalLanguageModel, list_models
    bilm = BidirectionalLanguageModel.from_pretrained("elmo-original")
    vectors = bilm.embed_sentences([["The", "cat", "sat", "."]])

The names below are imported on first use, by PEP 562. So importing a
light part of the package, such as the ``bilm-keras`` command's parser or
the vocabulary tools, does not import TensorFlow, which costs seconds and
hundreds of megabytes.

The package is built in layers. Bottom to top, they are ``_utils`` <
``options`` < ``layers``, ``data`` < ``weights`` < ``pretrained`` <
``models`` < ``embedding`` < the facade ``bidirectional_language_model`` <
``training`` < ``export`` < ``cli``. A module imports only from its own
unit and those below it, and no modules import each other.
``docs/architecture.md`` has the table and what each unit holds.
``tests/test_layering.py`` enforces it.
"""

import os as _os

from bilm_keras._utils.console_log import (
    install_console_handler as _install_console_handler,
)
from bilm_keras._utils.cpu_settings import (
    apply_cpu_settings as _apply_cpu_settings,
)
from bilm_keras._utils.keras_registration import (
    import_when_imported as _import_when_imported,
)
from bilm_keras._utils.keras_registration import (
    register_when_keras_loads as _register_when_keras_loads,
)
from bilm_keras._utils.lazy import lazy_exports as _lazy_exports
from bilm_keras._utils.version import __version__  # noqa: F401

_os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# the library logs; a script sees its lines as the command does, and can
# silence or redirect them (bilm_keras._utils.console_log)
_install_console_handler()
# this CPU class's TensorFlow settings (oneDNN on AVX2-only CPUs), read
# when TensorFlow is imported: set now, unless the user set them or
# TensorFlow came first (bilm_keras._utils.cpu_settings)
_apply_cpu_settings()

#: public name -> the module that defines it
_EXPORTS = {
    "Batcher": "bilm_keras.data.batcher",
    "TokenBatcher": "bilm_keras.data.batcher",
    "ManyLangsBatcher": "bilm_keras.data.manylangs_batcher",
    "batcher_for_options": "bilm_keras.data.batcher_for_options",
    "UnicodeCharsVocabulary": "bilm_keras.data.vocabulary",
    "Vocabulary": "bilm_keras.data.vocabulary",
    "dump_bilm_embeddings": "bilm_keras.embedding.dump",
    "dump_token_embeddings": "bilm_keras.embedding.dump",
    "merge_embedding_files": "bilm_keras.embedding.merge",
    "weight_layers": "bilm_keras.layers.weight_layers",
    "ELMoEmbedding": "bilm_keras.keras_layer.elmo_embedding",
    "ELMoPreprocessor": "bilm_keras.keras_layer.elmo_preprocessor",
    "BidirectionalLanguageModel":
        "bilm_keras.bidirectional_language_model",
    "BiLMBackbone": "bilm_keras.models.bilm_backbone",
    "BulkEmbedder": "bilm_keras.embedding.bulk_embedder",
    "EmbeddingSpec": "bilm_keras.embedding.outputs",
    "SettingError": "bilm_keras._utils.settings",
    "BiLMOptions": "bilm_keras.options",
    "convert_manylangs": "bilm_keras.weights.manylangs_conversion",
    "resolve_model": "bilm_keras.pretrained",
    "list_models": "bilm_keras.pretrained",
}

__all__ = sorted(_EXPORTS)

# a .keras file holding these layers loads after ``import bilm_keras``
# alone, and Keras is not imported for it
_register_when_keras_loads({
    "bilm_keras>ELMoEmbedding": ("bilm_keras.keras_layer.elmo_embedding",
                                 "ELMoEmbedding"),
    "bilm_keras>TokenMask": ("bilm_keras.export.token_mask", "TokenMask"),
    "bilm_keras>ELMoPreprocessor": ("bilm_keras.keras_layer.elmo_preprocessor",
                                    "ELMoPreprocessor"),
})

# keras_hub.models.Backbone.from_preset finds our presets' backbone by
# name once keras-hub is imported, before or after this package
_import_when_imported("keras_hub", "bilm_keras.keras_layer.keras_hub_backbone")

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
