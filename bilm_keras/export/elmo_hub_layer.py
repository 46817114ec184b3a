"""ELMoHubLayer: an exported ELMo SavedModel as a trainable Keras 3 layer."""

from __future__ import annotations

import os
from typing import Optional

import keras
import tensorflow as tf

from bilm_keras.export.token_mask import TokenMask
from bilm_keras.weights.tfhub_module import TFHUB_MODULE_FILE

SIGNATURES = ("default", "tokens", "elmo")


def _keras_name(variable) -> str:
    # Keras 3 names may not hold "/" and its optimizers build scope names
    # from them, which ":0" breaks.
    return variable.name.split(":")[0].replace("/", "_")


@keras.saving.register_keras_serializable(package="bilm_keras")
class ELMoHubLayer(keras.layers.Layer):
    """A SavedModel written by :func:`~bilm_keras.export.export_hub`, as a
    Keras 3 layer whose scalar-mix weights train with ``model.fit``. So do
    its LM weights, if exported with ``trainable_lm``.

    ``keras.layers.TFSMLayer(path, call_endpoint="default")`` works for
    inference. But Keras 3's optimizers cannot build slot variables for
    its weights, whose names keep TensorFlow's ``:0``, so fine-tuning with
    Adam fails there. This layer re-wraps the SavedModel's own variables
    under clean names and takes trainability from the SavedModel's
    ``trainable_variables``.

    Args:
        savedmodel_path: the SavedModel directory. Keras takes ``path``.
        signature: ``"default"``, ``"tokens"`` or ``"elmo"``.
        output_key: one output (``"default"``, ``"elmo"``, ...) or None for
            the whole dict.
        trainable: bool. False freezes every weight.

    Call arguments:
        inputs: for ``default``, `(batch,)` tf.string sentences. For
            ``tokens``, a dict ``{"tokens": (batch, max_len) tf.string,
            "sequence_len": (batch,) int32}``. For ``elmo``, `(batch,
            time + 2, max_characters_per_token)` int32 char ids from
            :class:`~bilm_keras.Batcher`. A converted ELMoForManyLangs
            model takes ``ManyLangsBatcher``'s ids, one column wider with
            a word part.
        training: bool. The biLM has no dropout, so it has no effect on
            values.

    Returns:
        ``output_key``'s tensor, e.g. `(batch, 2 * projection_dim)` for
        ``"default"``, or the dict of all outputs, see
        :mod:`bilm_keras.export.saved_model_export`. A per-token output such as
        ``"elmo"``, ``"word_emb"`` or ``"lstm_outputs1"`` carries a Keras
        mask `(batch, time)`, so RNNs and attention after it skip the
        padding.

    Example:
        >>> text = keras.Input(shape=(), dtype="string")
        >>> vec = ELMoHubLayer("elmo_savedmodel")(text)
        >>> prob = keras.layers.Dense(1, activation="sigmoid")(vec)
        >>> model = keras.Model(text, prob)
    """

    def __init__(
        self,
        savedmodel_path: str | os.PathLike,
        signature: str = "default",
        output_key: Optional[str] = "default",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if signature not in SIGNATURES:
            raise ValueError(
                f"signature: expected one of {SIGNATURES}, found "
                f"{signature!r}"
            )
        self.savedmodel_path = os.fspath(savedmodel_path)
        self.signature = signature
        self.output_key = output_key
        if not os.path.isdir(self.savedmodel_path):
            raise FileNotFoundError(
                f"{self.savedmodel_path}: SavedModel not found"
            )
        if os.path.isfile(os.path.join(self.savedmodel_path,
                                       TFHUB_MODULE_FILE)):
            # loading it would run a TF1 graph's initializers: refuse first
            raise ValueError(
                f"{self.savedmodel_path}: expected a SavedModel from "
                f"export_hub, found a TF1 Hub module ({TFHUB_MODULE_FILE}); "
                "convert it with `bilm-keras convert-tfhub --module "
                f"{self.savedmodel_path} --outdir OUT`, or load it with "
                "from_pretrained")
        # A SavedModel is a file format whose reading *is* the layer, as for
        # TFSMLayer and hub.KerasLayer.
        self._module = tf.saved_model.load(self.savedmodel_path)
        for attr in ("variables", "trainable_variables", *SIGNATURES):
            if not hasattr(self._module, attr):
                raise ValueError(
                    f"{self.savedmodel_path}: expected a SavedModel from "
                    f"export_hub (with '{attr}'), found one without it"
                )
        trainable_ids = {id(v) for v in self._module.trainable_variables}
        self._hub_weights = [
            keras.Variable(
                initializer=v,  # wraps the SavedModel's own tf.Variable
                trainable=id(v) in trainable_ids,
                name=_keras_name(v),
            )
            for v in self._module.variables
        ]
        self.built = True

    def call(self, inputs, training=False):
        if self.signature == "default":
            outputs = self._module(inputs, training=bool(training))
        elif self.signature == "tokens":
            outputs = self._module.tokens(
                inputs["tokens"], tf.cast(inputs["sequence_len"], tf.int32)
            )
        else:
            outputs = self._module.elmo(tf.cast(inputs, tf.int32))
        if self.output_key is None:
            return outputs
        if self.output_key not in outputs:
            raise KeyError(
                f"output_key: expected one of {sorted(outputs)}, found "
                f"{self.output_key!r}"
            )
        return outputs[self.output_key]

    def compute_mask(self, inputs, mask=None):
        if self.output_key in (None, "default", "sequence_len"):
            return None
        if self.signature == "default":
            return TokenMask()(inputs)
        if self.signature == "tokens":
            return TokenMask()(inputs["tokens"], inputs["sequence_len"])
        # char ids: token t sits at position t + 1, and is real when
        # position t + 2 holds a token or </S>
        valid = keras.ops.any(keras.ops.greater(inputs, 0), axis=-1)
        return valid[:, 2:]  # (B, T)

    def get_config(self):
        config = super().get_config()
        config.update(
            savedmodel_path=self.savedmodel_path,
            signature=self.signature,
            output_key=self.output_key,
        )
        return config
