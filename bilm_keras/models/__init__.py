"""The biLM as models: the backbone (ids -> per-layer activations), the
language model trained on it (backbone + softmax + loss), its outputs as
bilm-tf's ``lm_embeddings``, and the one function that loads a pretrained
backbone from its files (:mod:`.backbone_loading`)."""

from bilm_keras.models.bilm_backbone import BiLMBackbone

__all__ = ["BiLMBackbone"]
