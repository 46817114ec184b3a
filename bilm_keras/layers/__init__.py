"""Keras layers of the biLM."""

from bilm_keras.layers.char_cnn_embedder import CharCNNEmbedder
from bilm_keras.layers.highway import Highway
from bilm_keras.layers.lstm_cell_with_projection import LSTMCellWithProjection
from bilm_keras.layers.lstm_stack import LSTMStack
from bilm_keras.layers.scalar_mix import ScalarMix
from bilm_keras.layers.token_embedder import TokenEmbedder

__all__ = [
    "CharCNNEmbedder",
    "Highway",
    "LSTMCellWithProjection",
    "LSTMStack",
    "ScalarMix",
    "TokenEmbedder",
]
