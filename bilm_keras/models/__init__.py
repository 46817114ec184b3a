"""The biLM backbone and the inference facade."""

from bilm_keras.models.bidirectional_language_model import (
    BidirectionalLanguageModel,
)
from bilm_keras.models.bilm_backbone import BiLMBackbone

__all__ = ["BiLMBackbone", "BidirectionalLanguageModel"]
