"""The Keras layer that puts a pretrained biLM inside a user's model:
``ELMoEmbedding``, its token cache, the cached-layers route that trains
the mix and a head on layers computed once, ``ELMoPreprocessor`` (text to
ids in ``tf.data`` under every backend), keras-hub's preset layout
(``keras_presets``), ``from_pretrained``'s loader (``pretrained_layer``)
and, with keras-hub, ``ELMoBackbone``."""
