"""The biLM backbone and the inference facade."""

from bilm_keras.models.bidirectional_language_model import (
    BidirectionalLanguageModel,
)
from bilm_keras.models.bilm_backbone import BiLMBackbone
from bilm_keras.models.bulk_embedder import BulkEmbedder

__all__ = ["BiLMBackbone", "BidirectionalLanguageModel", "BulkEmbedder"]
