"""Vocabularies, batchers and training datasets."""

from bilm_keras.data.batcher import Batcher, TokenBatcher
from bilm_keras.data.vocabulary import (
    UnicodeCharsVocabulary,
    Vocabulary,
    VocabularyError,
)

__all__ = [
    "Batcher",
    "TokenBatcher",
    "UnicodeCharsVocabulary",
    "Vocabulary",
    "VocabularyError",
]

# training data (issue 3)
from bilm_keras.data.lm_dataset import (  # noqa: E402
    BidirectionalLMDataset,
    CorpusError,
    LMDataset,
    count_tokens,
    lm_dataset_fn,
    make_tf_dataset,
)

__all__ += [
    "BidirectionalLMDataset",
    "CorpusError",
    "LMDataset",
    "count_tokens",
    "lm_dataset_fn",
    "make_tf_dataset",
]
