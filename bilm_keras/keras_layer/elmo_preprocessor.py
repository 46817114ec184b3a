"""ELMoPreprocessor: text to a biLM's ids, in ``tf.data`` under any Keras
backend."""

from __future__ import annotations

import json
import os
from typing import Optional

import keras
import numpy as np
import tensorflow as tf

from bilm_keras.export.text_ids import graph_converter, strings_to_ids
from bilm_keras.options import BiLMOptions
from bilm_keras.pretrained.keras_preset_files import (
    ASSETS_DIR,
    PREPROCESSOR_FILE,
)

#: the asset files: a word-input model's vocabulary, a converted
#: ELMoForManyLangs model's dictionaries (upstream's ``token<TAB>id``)
VOCAB_ASSET, CHAR_DIC_ASSET, WORD_DIC_ASSET = (
    "vocab.txt", "char.dic", "word.dic")


@keras.saving.register_keras_serializable(package="bilm_keras")
class ELMoPreprocessor(keras.layers.Layer):
    """Text in, the ids a biLM reads out, as its batcher gives them.

    It is keras-hub's preprocessor of the biLM: it runs in ``tf.data``
    whatever ``KERAS_BACKEND`` is, and on NumPy arrays or lists of str.
    Inside ``tf.data`` it returns TensorFlow tensors. Called eagerly it
    returns the backend's tensors. The ids equal :class:`~bilm_keras.
    Batcher`'s for a bilm-tf character model, :class:`~bilm_keras.
    ManyLangsBatcher`'s for a converted ELMoForManyLangs model and
    :class:`~bilm_keras.TokenBatcher`'s for a word-input model.
    :class:`~bilm_keras.ELMoEmbedding` takes them under every backend.

    Build it for a layer with :meth:`for_layer`, for a preset or a
    published model with :meth:`from_preset`, or for options with
    :meth:`from_options`.

    Args:
        use_character_inputs: bool. False for a word-input model.
        max_characters_per_token: int or None. A character model's
            ``char_cnn.max_characters_per_token``.
        vocabulary: list of str or None. A word-input model's vocabulary
            in id order.
        char_dic: dict or None. A converted ELMoForManyLangs model's
            ``char.dic``, token to id.
        word_dic: dict or None. Its ``word.dic``, None without a word part.

    Call arguments:
        inputs: `(batch,)` sentences, split on whitespace as
            ``str.split()``, or `(batch, time)` tokens padded at the end
            with ``""``. tf.string, a NumPy array of str or bytes, or a
            list of str.

    Returns:
        `(batch, time + 2, ids_width)` int32 with ``<S>`` and ``</S>``, 0
        past each sentence's end. A word-input model's are `(batch, time +
        2)`. Padded tokens keep their width as ``time``.

    Example:
        >>> preprocessor = ELMoPreprocessor(max_characters_per_token=50)
        >>> preprocessor(["The cat sat ."]).shape
        (1, 6, 50)
    """

    def __init__(
        self,
        use_character_inputs: bool = True,
        max_characters_per_token: Optional[int] = 50,
        vocabulary: Optional[list] = None,
        char_dic: Optional[dict] = None,
        word_dic: Optional[dict] = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # as keras-hub's PreprocessingLayer: tf.string inputs pass to call
        # as they are, under every backend
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.use_character_inputs = bool(use_character_inputs)
        self.max_characters_per_token = (
            max_characters_per_token if use_character_inputs else None)
        self.vocabulary = None if vocabulary is None else list(vocabulary)
        self.char_dic = None if char_dic is None else dict(char_dic)
        self.word_dic = None if word_dic is None else dict(word_dic)
        self._converter = None
        if use_character_inputs or vocabulary is not None:
            self._set_converter()
        self.built = True

    def _set_converter(self) -> None:
        self._converter = graph_converter(
            use_character_inputs=self.use_character_inputs,
            max_characters_per_token=self.max_characters_per_token,
            vocabulary=self.vocabulary, char_dic=self.char_dic,
            word_dic=self.word_dic, owner=self.name)

    # ------------------------------------------------------------ factory
    @classmethod
    def from_options(cls, options: BiLMOptions, *,
                     vocabulary: Optional[list] = None,
                     char_dic: Optional[dict] = None,
                     word_dic: Optional[dict] = None,
                     **kwargs) -> "ELMoPreprocessor":
        """The preprocessor of a model with ``options``."""
        return cls(
            use_character_inputs=options.use_character_inputs,
            max_characters_per_token=(
                options.char_cnn.max_characters_per_token
                if options.char_cnn is not None else None),
            vocabulary=vocabulary, char_dic=char_dic, word_dic=word_dic,
            **kwargs)

    @classmethod
    def for_layer(cls, layer, **kwargs) -> "ELMoPreprocessor":
        """The preprocessor of an :class:`~bilm_keras.ELMoEmbedding`."""
        return cls.from_options(
            BiLMOptions.from_dict(layer.options, source=layer.name),
            vocabulary=layer.vocabulary, char_dic=layer.char_dic,
            word_dic=layer.word_dic, **kwargs)

    @classmethod
    def from_preset(cls, spec, **kwargs) -> "ELMoPreprocessor":
        """The preprocessor of a preset folder, an ``hf://`` handle or any
        model ``ELMoEmbedding.from_preset`` takes.

        A preset's ``preprocessor.json`` and assets are read as they are.
        Any other model's options and vocabulary or dictionaries are read
        from its resolved folder, without its weights.
        """
        from bilm_keras.pretrained import check_before_download, resolve_model
        from bilm_keras.pretrained.hf_hub import preset_folder

        label = os.fspath(spec)
        folder = preset_folder(label)
        if folder is None:
            check_before_download(label, vocab_given=False, vocab_flag=None)
            model = resolve_model(spec)
            options = model.options
            return cls.from_options(
                options, **model_assets(options, model.vocab_file,
                                        model.name), **kwargs)
        path = os.path.join(folder, PREPROCESSOR_FILE)
        label = f"{label}: {PREPROCESSOR_FILE}"
        try:
            with open(path, encoding="utf-8") as f:
                config = json.load(f)
        except (OSError, ValueError) as e:
            raise ValueError(f"{label}: expected a serialized "
                             f"ELMoPreprocessor, cannot read it ({e})"
                             ) from None
        registered = config.get("registered_name") \
            if isinstance(config, dict) else None
        if registered != "bilm_keras>ELMoPreprocessor" \
                or not isinstance(config.get("config"), dict):
            raise ValueError(
                f"{label}: registered_name: expected "
                f"'bilm_keras>ELMoPreprocessor', found {registered!r}")
        arguments = dict(config["config"])
        arguments.update(read_assets(os.path.join(folder, ASSETS_DIR)))
        arguments.update(kwargs)
        return cls.from_config(arguments)

    # ------------------------------------------------------------ assets
    def save_assets(self, folder: str | os.PathLike) -> None:
        """Writes the vocabulary or dictionaries into ``folder``."""
        from bilm_keras._utils.atomic_files import atomic_path

        folder = os.fspath(folder)
        os.makedirs(folder, exist_ok=True)
        files = {}
        if self.vocabulary is not None:
            files[VOCAB_ASSET] = "".join(f"{w}\n" for w in self.vocabulary)
        for name, dic in ((CHAR_DIC_ASSET, self.char_dic),
                          (WORD_DIC_ASSET, self.word_dic)):
            if dic is not None:
                files[name] = "".join(f"{t}\t{i}\n" for t, i in dic.items())
        for name, text in files.items():
            with atomic_path(os.path.join(folder, name)) as tmp:
                with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)

    def load_preset_assets(self, preset: str | os.PathLike) -> None:
        """Reads the assets a preset folder keeps (keras-hub's hook)."""
        assets = read_assets(os.path.join(os.fspath(preset), ASSETS_DIR))
        self.vocabulary = assets.get("vocabulary", self.vocabulary)
        self.char_dic = assets.get("char_dic", self.char_dic)
        self.word_dic = assets.get("word_dic", self.word_dic)
        self._set_converter()

    # -------------------------------------------------------------- call
    @property
    def ids_width(self) -> Optional[int]:
        """Ids per token, None for a word-input model's `(batch, time +
        2)`."""
        if not self.use_character_inputs:
            return None
        return self.max_characters_per_token + int(self.word_dic is not None)

    def call(self, inputs):
        if self._converter is None and not self.use_character_inputs:
            raise ValueError(
                f"{self.name}: vocabulary: a word-input model's "
                "preprocessor needs its vocabulary, found None")
        with tf.device("cpu"):
            strings = _as_strings(inputs, self.name)
            ids = strings_to_ids(strings, self._converter,
                                 self.max_characters_per_token)
        if (keras.backend.backend() == "tensorflow"
                or not tf.executing_eagerly()):
            return ids  # tf.data traces a graph: its tensors stay TF's
        return keras.ops.convert_to_tensor(ids.numpy())

    def compute_output_shape(self, input_shape):
        time = None if len(input_shape) == 1 or input_shape[1] is None \
            else input_shape[1] + 2
        if self.ids_width is None:
            return (input_shape[0], time)
        return (input_shape[0], time, self.ids_width)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(self.compute_output_shape(inputs.shape),
                                 dtype="int32")

    def get_config(self):
        config = super().get_config()
        config.update(
            use_character_inputs=self.use_character_inputs,
            max_characters_per_token=self.max_characters_per_token,
            vocabulary=self.vocabulary,
            char_dic=self.char_dic,
            word_dic=self.word_dic,
        )
        return config


def _as_strings(inputs, name: str) -> tf.Tensor:
    """``inputs`` as a rank 1 or 2 tf.string tensor, or an error naming
    what was found."""
    if not isinstance(inputs, tf.Tensor):
        array = np.asarray(inputs)
        if array.dtype.kind not in "USO":
            raise ValueError(
                f"{name}: inputs: expected strings, found {array.dtype}")
        inputs = tf.constant(array.astype(object) if array.dtype.kind == "U"
                             else array, tf.string)
    if inputs.dtype != tf.string or inputs.shape.rank not in (1, 2):
        raise ValueError(
            f"{name}: inputs: expected tf.string sentences (batch,) or "
            f"padded tokens (batch, time), found {inputs.dtype.name} of "
            f"shape {tuple(inputs.shape)}")
    return inputs


def read_assets(folder: str | os.PathLike) -> dict:
    """The preprocessor's arguments kept as files in ``folder``:
    ``vocabulary``, ``char_dic`` and ``word_dic`` where present."""
    from bilm_keras.data.manylangs_dictionaries import (
        read_char_dic,
        read_word_dic,
    )
    from bilm_keras.data.vocabulary import Vocabulary

    folder = os.fspath(folder)
    found = {}
    path = os.path.join(folder, VOCAB_ASSET)
    if os.path.isfile(path):
        vocab = Vocabulary(path, validate_file=True)
        found["vocabulary"] = [vocab.id_to_word(i) for i in range(vocab.size)]
    path = os.path.join(folder, CHAR_DIC_ASSET)
    if os.path.isfile(path):
        found["char_dic"] = read_char_dic(path)
    path = os.path.join(folder, WORD_DIC_ASSET)
    if os.path.isfile(path):
        found["word_dic"] = read_word_dic(path)
    return found


def model_assets(options: BiLMOptions, vocab_file,
                 model_name: str = "the model") -> dict:
    """A resolved model's vocabulary (word input) or dictionaries
    (ELMoForManyLangs), as the preprocessor's and the layer's arguments.

    Raises:
        ValueError: a word-input model without ``vocab_file``.
    """
    from bilm_keras.data.manylangs_dictionaries import read_dictionaries
    from bilm_keras.data.vocabulary import Vocabulary

    if not options.use_character_inputs:
        if vocab_file is None:
            raise ValueError(
                f"vocab_file: {model_name} takes words and ships no "
                "vocabulary (pass vocab_file=)")
        vocab = Vocabulary(os.fspath(vocab_file), validate_file=True)
        return {"vocabulary": [vocab.id_to_word(i)
                               for i in range(vocab.size)]}
    if options.manylangs is not None:
        char_dic, word_dic = read_dictionaries(
            options.manylangs.char_dic,
            options.manylangs.word_dic
            if options.manylangs.has_word_part else None)
        return {"char_dic": char_dic, "word_dic": word_dic}
    return {}
