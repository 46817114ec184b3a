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
