"""Vocabularies, batchers and training datasets."""

from bilm_keras.data.batcher import Batcher, TokenBatcher
from bilm_keras.data.batcher_for_options import batcher_for_options
from bilm_keras.data.manylangs_batcher import ManyLangsBatcher
from bilm_keras.data.vocabulary import (
    UnicodeCharsVocabulary,
    Vocabulary,
    VocabularyError,
)

__all__ = [
    "Batcher",
    "ManyLangsBatcher",
    "TokenBatcher",
    "batcher_for_options",
    "UnicodeCharsVocabulary",
    "Vocabulary",
    "VocabularyError",
]

# training data
from bilm_keras.data.corpus import CorpusError, count_tokens  # noqa: E402
from bilm_keras.data.lm_dataset import (  # noqa: E402
    BidirectionalLMDataset,
    LMDataset,
)
from bilm_keras.data.tf_dataset import (  # noqa: E402
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

from bilm_keras.data.stdlib_corpus import write_stdlib_corpus  # noqa: E402
from bilm_keras.data.vocab_builder import (  # noqa: E402
    build_vocab,
    read_vocab_stats,
)

__all__ += ["build_vocab", "read_vocab_stats", "write_stdlib_corpus"]
