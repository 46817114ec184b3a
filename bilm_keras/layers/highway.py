"""Highway layer (Srivastava et al. 2015) as bilm-tf computes it."""

import keras

from bilm_keras.layers import precision
from bilm_keras.layers.initialization import initial


@keras.saving.register_keras_serializable(package="bilm_keras")
class Highway(keras.layers.Layer):
    """One highway layer over the last axis.

    ``carry = sigmoid(x W_carry + b_carry)``,
    ``transform = relu(x W_transform + b_transform)``,
    ``y = carry * transform + (1 - carry) * x``.

    bilm-tf calls the gate that multiplies the *new* value "carry". The name
    is kept so the weights map one to one onto its HDF5 datasets
    ``CNN_high_i/{W,b}_{carry,transform}``.

    Args:
        carry_bias_initializer: bilm-tf starts ``b_carry`` at -2 so that a
            fresh layer mostly passes its input through.

    Call arguments:
        inputs: `(..., dim)` float32 tensor.

    Returns:
        `(..., dim)` float32, the same shape: under a mixed policy
        (:mod:`~bilm_keras.layers.precision`) only the two products run in
        its compute dtype.

    Example:
        >>> layer = Highway()
        >>> tuple(layer(keras.ops.zeros((2, 3, 8))).shape)
        (2, 3, 8)

    Reference:
        Srivastava, Greff, Schmidhuber, "Highway Networks", 2015.
    """

    def __init__(self, carry_bias_initializer=-2.0, **kwargs):
        super().__init__(**kwargs)
        self.carry_bias_initializer = carry_bias_initializer
        precision.float32_io(self)

    def build(self, input_shape):
        dim = int(input_shape[-1])
        init = keras.initializers.RandomNormal(stddev=(1.0 / dim) ** 0.5)
        self.carry_kernel = self.add_weight(
            autocast=False,
            name="carry_kernel", shape=(dim, dim), initializer=initial(init)
        )
        self.carry_bias = self.add_weight(
            autocast=False,
            name="carry_bias",
            shape=(dim,),
            initializer=keras.initializers.Constant(
                self.carry_bias_initializer
            ),
        )
        self.transform_kernel = self.add_weight(
            autocast=False,
            name="transform_kernel", shape=(dim, dim),
            initializer=initial(init),
        )
        self.transform_bias = self.add_weight(
            autocast=False,
            name="transform_bias", shape=(dim,), initializer="zeros"
        )

    def call(self, inputs):
        dtype = self.compute_dtype
        carry = keras.ops.sigmoid(
            precision.tensordot(inputs, self.carry_kernel, dtype)
            + self.carry_bias
        )
        transform = keras.ops.relu(
            precision.tensordot(inputs, self.transform_kernel, dtype)
            + self.transform_bias
        )
        return carry * transform + (1.0 - carry) * inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(carry_bias_initializer=self.carry_bias_initializer)
        return config
