"""Export a biLM as a TF-Hub-style SavedModel
(:mod:`.saved_model_export`), the Keras layer over that SavedModel
(``ELMoHubLayer``) and the in-graph tokenizers both use."""

from bilm_keras.export.elmo_hub_layer import ELMoHubLayer
from bilm_keras.export.graph_char_ids import (
    padded_tokens_to_char_ids,
    sentences_to_char_ids,
    split_sentences,
    token_char_ids,
)
from bilm_keras.export.graph_manylangs_ids import ManyLangsGraphIds
from bilm_keras.export.saved_model_export import (
    ELMoHubModule,
    ExportError,
    export_hub,
    export_hub_from_save_dir,
)

__all__ = [
    "ELMoHubLayer",
    "ELMoHubModule",
    "ExportError",
    "ManyLangsGraphIds",
    "export_hub",
    "export_hub_from_save_dir",
    "padded_tokens_to_char_ids",
    "sentences_to_char_ids",
    "split_sentences",
    "token_char_ids",
]
