"""bilm_keras: ELMo's bidirectional language model on TensorFlow 2 / Keras 3.

The public API mirrors bilm-tf's, so its usage code keeps working::

    from bilm_keras import Batcher, BidirectionalLanguageModel, weight_layers
"""

import os as _os

_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from bilm_keras.data.batcher import Batcher, TokenBatcher  # noqa: E402
from bilm_keras.data.vocabulary import (  # noqa: E402
    UnicodeCharsVocabulary,
    Vocabulary,
)
from bilm_keras.dump import (  # noqa: E402
    dump_bilm_embeddings,
    dump_token_embeddings,
)
from bilm_keras.elmo import weight_layers  # noqa: E402
from bilm_keras.models.bidirectional_language_model import (  # noqa: E402
    BidirectionalLanguageModel,
)
from bilm_keras.models.bilm_backbone import BiLMBackbone  # noqa: E402
from bilm_keras.options import BiLMOptions  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Batcher",
    "BiLMBackbone",
    "BiLMOptions",
    "BidirectionalLanguageModel",
    "TokenBatcher",
    "UnicodeCharsVocabulary",
    "Vocabulary",
    "dump_bilm_embeddings",
    "dump_token_embeddings",
    "weight_layers",
]
