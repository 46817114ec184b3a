"""The Keras layer that puts a pretrained biLM inside a user's model:
:class:`~bilm_keras.keras_layer.elmo_embedding.ELMoEmbedding`, its token
cache and the cached-layers route that trains the mix and a head on
layers computed once."""
