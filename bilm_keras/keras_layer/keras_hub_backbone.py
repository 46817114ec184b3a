"""ELMoBackbone: the layer as a keras-hub ``Backbone``, so that
``keras_hub.models.Backbone.from_preset(DIR)`` loads a preset of
``ELMoEmbedding.save_to_preset``.

It needs the ``keras_hub`` extra. ``import bilm_keras`` registers it once
keras-hub is imported, before or after (:mod:`bilm_keras.
_utils.keras_registration`).
"""

from __future__ import annotations

import keras
import keras_hub

from bilm_keras.keras_layer.elmo_embedding import ELMoEmbedding
from bilm_keras.keras_layer.keras_presets import check_format_version, ids_input


@keras.saving.register_keras_serializable(package="bilm_keras")
class ELMoBackbone(keras_hub.models.Backbone):
    """A pretrained biLM as a keras-hub backbone: ids in, ELMo out.

    Its one layer is an :class:`~bilm_keras.ELMoEmbedding`, and its config
    is that layer's. :class:`~bilm_keras.ELMoPreprocessor` gives its ids.

    Args:
        options: dict. The biLM's options, as ``ELMoEmbedding``'s.
        dtype: the dtype policy.
        name: the backbone's and its layer's name.
        **kwargs: the other arguments of ``ELMoEmbedding``.

    Call arguments:
        token_ids: `(batch, time + 2, ids_width)` int32, or `(batch, time
            + 2)` for a word-input model.

    Returns:
        What the layer's ``output`` gives, e.g. `(batch, time, dim)`.

    Example:
        >>> backbone = keras_hub.models.Backbone.from_preset("elmo_preset")
        >>> preprocessor = ELMoPreprocessor.from_preset("elmo_preset")
        >>> vectors = backbone(preprocessor(["The cat sat ."]))
    """

    def __init__(self, options, *, dtype=None, name="elmo", **kwargs):
        # === Layers ===
        self.embedding = ELMoEmbedding(options, dtype=dtype, name=name,
                                       **kwargs)
        # === Functional model ===
        token_ids = ids_input(self.embedding)
        outputs = self.embedding(token_ids)
        super().__init__(inputs=token_ids, outputs=outputs, dtype=dtype,
                         name=name)

    def get_config(self):
        return self.embedding.get_config()

    @classmethod
    def from_config(cls, config):
        return super().from_config(check_format_version(
            config, config.get("name", "ELMoBackbone")))
