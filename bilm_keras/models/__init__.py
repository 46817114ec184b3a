"""The biLM as models.

They are the backbone (ids -> per-layer activations), the language model
trained on it (backbone + softmax + loss), and its outputs as bilm-tf's
``lm_embeddings``. The one function that loads a pretrained backbone from
its files is here too (:mod:`.backbone_loading`)."""

from bilm_keras.models.bilm_backbone import BiLMBackbone

__all__ = ["BiLMBackbone"]
