"""One sentence's array in an answer: nested JSON lists, or base64 of its
little-endian bytes in C order (what ``numpy.frombuffer(...,
"<f4").reshape(shape)`` reads back; OpenAI's ``encoding_format:
"base64"`` for a vector)."""

from __future__ import annotations

import base64

import numpy as np


def encode_array(array: np.ndarray, encoding: str):
    """``array`` as ``encoding`` asks: ``"json"``, nested lists of
    floats (exact: each float32 or float16 value is a float64 exactly),
    or ``"base64"``, a string."""
    if encoding == "json":
        return array.tolist()
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return base64.b64encode(np.ascontiguousarray(little).tobytes()).decode(
        "ascii")


def decode_array(text: str, dtype: str, shape) -> np.ndarray:
    """A base64 answer back as an array (for a Python client)."""
    raw = base64.b64decode(text)
    return np.frombuffer(raw, np.dtype(dtype).newbyteorder("<")).reshape(
        shape)
