"""bilm-tf / AllenNLP HDF5 weights <-> the variables of a
:class:`~bilm_keras.models.bilm_backbone.BiLMBackbone`.

One declarative table says where every dataset goes. Every weight-format
quirk lives here and only here:

* ``char_embed`` has 261 rows in the file. The Keras table has one more,
  row 0, for the padding id of the +1-shifted char ids, which is zero.
* ``CNN/W_cnn_i`` is a conv2d kernel ``(1, width, char_dim, num)``. Keras
  keeps the conv1d kernel ``(width, char_dim, num)``.
* ``embedding`` (token input) likewise has no padding row in the file.
* A converted ELMoForManyLangs model, from ``bilm-keras convert-manylangs``:
  ``char_embed`` has char.dic's n_chars rows, with the same padding-row
  shift. ``word_embed`` ``(n_words, word_dim)`` has no padding row either.
  ``CNN_proj/W_proj`` is ``(word_dim + n_filters, P)`` over
  ``[word ; chars]`` and always present. Upstream's own conventions are
  mapped to these by :mod:`bilm_keras.weights.manylangs_pkl`.
* The LSTM kernels keep TF1's layout (``[x, h] @ W_0``, gates i, j, f, o),
  so they copy unchanged.

Loading checks every shape before assigning anything, uses every dataset it
expects and names what is missing. Saving writes a temporary file and
renames it, so an interrupted save never leaves a half-written file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Callable, List, Optional

import h5py
import keras
import numpy as np
import tensorflow as tf

from bilm_keras._utils.backends import on_tensorflow
from bilm_keras._utils.atomic_files import atomic_hdf5
from bilm_keras._utils.problem_list import name_list, problem_list
from bilm_keras.layers.initialization import placeholder_weights
from bilm_keras.options import BiLMOptions
from bilm_keras.weights.bilm_tf_names import (
    CHAR_EMBED,
    LSTM_BIAS,
    LSTM_KERNEL,
    LSTM_PROJECTION,
    PROJECTION_BIAS,
    PROJECTION_KERNEL,
    TOKEN_EMBEDDING,
    WORD_EMBED,
    conv_bias,
    conv_kernel,
    highway_bias,
    highway_kernel,
    lstm_hdf5_prefix,
)

#: what the functions below take: a ``BiLMBackbone`` (``bilm_keras.models``
#: stands above this package and imports it, never the reverse)
Backbone = keras.layers.Layer


class WeightFileError(ValueError):
    """An HDF5 weight file that does not fit the model."""


def _identity(x):
    return x


def _add_padding_row(x):
    # the file has no row for id 0 (padding of +1-shifted ids); add zeros
    return np.concatenate([np.zeros((1,) + x.shape[1:], x.dtype), x])


def _drop_padding_row(x):
    return x[1:]


def _conv1d_from_conv2d(x):
    # bilm-tf used conv2d with a height-1 kernel (1, width, in, out)
    return x[0]


def _conv2d_from_conv1d(x):
    return x[None]


def _transpose(x):
    # W_0, W_P_0: the LSTM cells hold the transposes of TF1's kernels
    return np.transpose(x)


@dataclasses.dataclass(frozen=True)
class WeightRow:
    """One dataset: its HDF5 path, the variable, and the two transforms."""

    hdf5_path: str
    variable: object
    to_keras: Callable = _identity
    to_hdf5: Callable = _identity
    #: where the file's row 0 goes in the variable when ``to_keras`` only
    #: shifts rows (0, or 1 after a padding row); None: ``to_keras``
    #: reshapes, so the dataset is read whole
    keras_row_offset: Optional[int] = 0
    #: the variable is the dataset transposed (``to_keras`` and
    #: ``to_hdf5`` transpose): the file's rows are the variable's columns
    transposed: bool = False


def weight_table(backbone: Backbone) -> List[WeightRow]:
    """The rows for every variable of a built backbone, in file order."""
    backbone.build_all()
    rows = []
    emb = backbone.token_embedder
    if backbone.use_character_inputs:
        rows.append(WeightRow(CHAR_EMBED, emb.char_embedding,
                              _add_padding_row, _drop_padding_row, 1))
        for i, (kernel, bias) in enumerate(
            zip(emb.conv_kernels, emb.conv_biases)
        ):
            rows.append(WeightRow(conv_kernel(i), kernel,
                                  _conv1d_from_conv2d, _conv2d_from_conv1d,
                                  None))
            rows.append(WeightRow(conv_bias(i), bias))
        for i, highway in enumerate(emb.highways):
            rows += [
                WeightRow(highway_kernel(i, "carry"), highway.carry_kernel),
                WeightRow(highway_bias(i, "carry"), highway.carry_bias),
                WeightRow(highway_kernel(i, "transform"),
                          highway.transform_kernel),
                WeightRow(highway_bias(i, "transform"),
                          highway.transform_bias),
            ]
        if emb.has_word_part:
            rows.append(WeightRow(WORD_EMBED, emb.word_embedding,
                                  _add_padding_row, _drop_padding_row, 1))
        if emb.use_projection:
            # (word_dim + n_filters, P): word rows first, as upstream
            rows += [
                WeightRow(PROJECTION_KERNEL, emb.projection_kernel),
                WeightRow(PROJECTION_BIAS, emb.projection_bias),
            ]
    else:
        rows.append(WeightRow(TOKEN_EMBEDDING, emb.embeddings,
                              _add_padding_row, _drop_padding_row, 1))
    for d, stack in enumerate(backbone.stacks.values()):
        for layer, cell in enumerate(stack.cells):
            p = lstm_hdf5_prefix(d, layer)
            rows += [
                WeightRow(f"{p}/{LSTM_KERNEL}", cell.kernel_t, _transpose,
                          _transpose, transposed=True),
                WeightRow(f"{p}/{LSTM_BIAS}", cell.bias),
            ]
            if cell.projection_dim:
                rows.append(WeightRow(f"{p}/{LSTM_PROJECTION}",
                                      cell.projection_kernel_t,
                                      _transpose, _transpose,
                                      transposed=True))
    return rows


def hdf5_shape(row: WeightRow) -> tuple:
    """The dataset shape a row expects (no array is allocated)."""
    view = np.broadcast_to(np.float32(0), tuple(row.variable.shape))
    return tuple(row.to_hdf5(view).shape)


@dataclasses.dataclass(frozen=True)
class Misfit:
    """A dataset the options ask for more of than the weights hold."""

    #: the dataset's path in the HDF5 layout
    path: str
    #: its shape as the options give it
    expected: tuple
    #: its shape in the weights, or None: no such dataset
    found: Optional[tuple]
    #: the option that asks for it (``"lstm.dim is 10000000"``)
    field: str

    def hdf5_problem(self) -> str:
        if self.found is None:
            return (f"missing dataset '{self.path}' (expected shape "
                    f"{self.expected}), which {self.field} asks for")
        return (f"dataset '{self.path}' has shape {self.found}, expected "
                f"{self.expected} ({self.field})")


def options_misfits(options: BiLMOptions,
                    shape_of: Callable[[str], Optional[tuple]], *,
                    use_character_inputs: bool = True) -> List[Misfit]:
    """The datasets ``options`` ask for more of than a weight file holds,
    found before a variable is made. Options with a size the file does not
    hold would otherwise build variables of that size first, before the
    table's check refuses them. That is gigabytes for
    ``"dim": 10000000``. A smaller size is left to that check.

    Args:
        options: the options a model is about to be built from.
        shape_of: callable. A dataset's path in the HDF5 layout -> its
            shape, or None where the weights have no such dataset.
        use_character_inputs: whether the char-CNN part is built.

    Returns:
        The misfits, the first layer's only for the LSTMs and the first
        missing highway's only (empty: nothing asks for more).
    """
    misfits = []

    def want(path: str, expected: tuple, field: str, axes=None) -> bool:
        # axes: those the options set (default all); the rest as found
        found = shape_of(path)
        if found is not None:
            found = tuple(found)
            axes = range(len(expected)) if axes is None else axes
            if len(found) == len(expected):
                expected = tuple(expected[i] if i in axes else found[i]
                                 for i in range(len(found)))
            if len(found) == len(expected) and all(
                    expected[i] <= found[i] for i in axes):
                return True
        misfits.append(Misfit(path, tuple(expected), found, field))
        return False

    cnn, lstm = options.char_cnn, options.lstm
    if use_character_inputs and cnn is not None:
        dim = cnn.char_embedding_dim
        want(CHAR_EMBED, (0, dim), f"char_cnn.embedding.dim {dim}", (1,))
        for i, (width, num) in enumerate(cnn.filters):
            want(conv_kernel(i), (1, width, dim, num),
                 f"char_cnn.filters[{i}] {[width, num]}", (1, 3))
        for i in range(cnn.n_highway):
            if not want(highway_kernel(i, "carry"),
                        (cnn.n_filters, cnn.n_filters),
                        f"char_cnn.n_highway {cnn.n_highway} (with "
                        f"{cnn.n_filters} filters)"):
                break
        words = options.manylangs
        if words is not None and words.word_embedding_dim:
            want(WORD_EMBED, (words.n_words, words.word_embedding_dim),
                 f"elmoformanylangs.n_words {words.n_words} and "
                 f"word_embedding_dim {words.word_embedding_dim}")
    # each cell reads [x ; h]: x and h are projection_dim wide, h is dim
    # wide where the cells do not project (LSTMStack's rule)
    projects = lstm.projection_dim < lstm.dim
    inputs = lstm.projection_dim + (lstm.projection_dim if projects
                                    else lstm.dim)
    for layer in range(lstm.n_layers):
        prefix = lstm_hdf5_prefix(0, layer)
        fits = want(f"{prefix}/{LSTM_KERNEL}", (inputs, 4 * lstm.dim),
                    f"lstm.dim {lstm.dim} and n_layers {lstm.n_layers}",
                    (1,))
        if fits and projects:
            fits = want(f"{prefix}/{LSTM_PROJECTION}",
                        (lstm.dim, lstm.projection_dim),
                        f"lstm.projection_dim {lstm.projection_dim}")
        if not fits:  # the first layer that does not fit says it
            break
    return misfits


def check_options_fit(options: BiLMOptions,
                      weight_file: str | os.PathLike | h5py.File,
                      *, use_character_inputs: bool = True) -> None:
    """Refuses options that ask for more than ``weight_file`` holds, before
    anything is built, see :func:`options_misfits`. An open file, from
    :func:`open_weight_file`, is read as it is and left open.

    Raises:
        WeightFileError: the file is missing or not HDF5, or the options
            ask for a dataset it lacks or a size beyond its shape. The
            message names the dataset, both shapes and the option.
    """
    with _reading(weight_file) as (name, fin):
        def shape_of(path):
            found = _dataset(fin, path)
            return None if found is None else found.shape

        misfits = options_misfits(options, shape_of,
                                  use_character_inputs=use_character_inputs)
    if misfits:
        raise WeightFileError(f"{name}: " + problem_list(
            [m.hdf5_problem() for m in misfits]))


def open_weight_file(weight_file: str | os.PathLike) -> h5py.File:
    """``weight_file`` open for reading, so that checking it against the
    options and loading it read one handle (the caller closes it).

    Raises:
        WeightFileError: the file is missing or not HDF5.
    """
    return _open_hdf5(os.fspath(weight_file))


@contextlib.contextmanager
def _reading(weight_file: str | os.PathLike | h5py.File):
    """``(name, handle)``: an open file as it is, left open for its owner,
    or a path opened here and closed on leaving."""
    if isinstance(weight_file, h5py.File):
        yield weight_file.filename, weight_file
        return
    name = os.fspath(weight_file)
    with _open_hdf5(name) as fin:
        yield name, fin


def _open_hdf5(name: str) -> h5py.File:
    """``h5py.File(name, "r")``, or one line saying why it cannot be read."""
    if not os.path.exists(name):
        raise WeightFileError(f"{name}: weight file not found")
    try:
        return h5py.File(name, "r")
    except OSError as e:
        found = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise WeightFileError(f"{name}: expected an HDF5 weight file, found "
                              f"a file h5py cannot read ({found})") from None


#: the dataset that tells a char-CNN file from a token-input one
_INPUT_KIND = {CHAR_EMBED: "a char-CNN", TOKEN_EMBEDDING: "a token-input"}


def _dataset(fin: h5py.File, path: str) -> Optional[h5py.Dataset]:
    """The dataset at ``path``, or None.

    None means absent, not a dataset, behind a link that loops, or behind
    an external link. A weight file's datasets are its own, so a link to
    another file is not followed.
    """
    parts = path.split("/")
    try:
        for i in range(1, len(parts) + 1):
            link = fin.get("/".join(parts[:i]), getlink=True)
            if link is None or isinstance(link, h5py.ExternalLink):
                return None
        found = fin.get(path)
    except (KeyError, RuntimeError, OSError, ValueError):
        return None
    return found if isinstance(found, h5py.Dataset) else None


def _checked_dataset(fin, path_name: str, row: WeightRow) -> h5py.Dataset:
    expected = hdf5_shape(row)
    ds = _dataset(fin, row.hdf5_path)
    if not isinstance(ds, h5py.Dataset):
        hint = ""
        other = [k for k in _INPUT_KIND if k != row.hdf5_path]
        if row.hdf5_path in _INPUT_KIND and isinstance(
                fin.get(other[0]), h5py.Dataset):
            # the usual mix-up: char options with a token model's file
            hint = (f"; the file holds {_INPUT_KIND[other[0]]} model "
                    f"(dataset '{other[0]}'), the options describe "
                    f"{_INPUT_KIND[row.hdf5_path]} one")
        raise WeightFileError(
            f"{path_name}: missing dataset '{row.hdf5_path}' "
            f"(expected shape {expected}){hint}"
        )
    if tuple(ds.shape) != expected:
        raise WeightFileError(
            f"{path_name}: dataset '{row.hdf5_path}' has shape "
            f"{tuple(ds.shape)}, expected {expected}"
        )
    if ds.dtype.kind not in "fiu":  # what reads into float32
        raise WeightFileError(
            f"{path_name}: dataset '{row.hdf5_path}' has dtype {ds.dtype}, "
            "expected floating-point numbers")
    return ds


#: Largest block of a dataset read and assigned at once (bytes)
LOAD_BLOCK_BYTES = 8 << 20


def _assign_from_dataset(ds: h5py.Dataset, row: WeightRow) -> None:
    """``row.variable = row.to_keras(ds)``, a block of rows at a time.

    Reading a whole dataset and assigning it holds two extra copies of it,
    the array and the tensor made from it. Each is 64 MB for an LSTM kernel
    of the published model, 1.6 GB for an 800k-token embedding table.
    Blocks of at most :data:`LOAD_BLOCK_BYTES` are written into the
    variable in place instead.
    """
    # JAX and PyTorch: the whole dataset at once (block assignment is a
    # TensorFlow resource op)
    if (row.keras_row_offset is None or ds.ndim == 0
            or not on_tensorflow() or tf.distribute.has_strategy()):
        value = np.empty(ds.shape, np.float32)
        ds.read_direct(value)
        row.variable.assign(row.to_keras(value))
        return
    target = row.variable.value  # the tf.Variable: sliced assignment
    offset = row.keras_row_offset
    if offset:
        _assign_rows(target, 0, np.zeros((offset,) + tuple(
            target.shape[1:]), np.float32))
    row_bytes = 4 * int(np.prod(ds.shape[1:], dtype=np.int64))
    step = max(1, LOAD_BLOCK_BYTES // max(row_bytes, 1))
    for start in range(0, ds.shape[0], step):
        stop = min(start + step, ds.shape[0])
        block = np.empty((stop - start,) + ds.shape[1:], np.float32)
        ds.read_direct(block, np.s_[start:stop])
        if row.transposed:  # the file's rows are the variable's columns
            _assign_columns(target, start, block.T)
        else:
            _assign_rows(target, offset + start, block)
    # a sliced assignment leaves the variable copying itself on every read
    # (TensorFlow's guard for sparse updates); nothing else holds it now
    tf.raw_ops.DisableCopyOnRead(resource=target.handle)


def _assign_rows(variable: tf.Variable, start: int, block) -> None:
    """``variable[start: start + len(block)] = block`` without reading the
    variable.

    ``variable[a:b].assign`` first reads the slice. Once a sliced
    assignment has put the variable in copy-on-read mode, every read
    copies it whole. That is 64 MB per LSTM kernel of the published model,
    kept by TensorFlow's allocator as resident memory.
    """
    block = np.asarray(block, np.float32)
    tf.raw_ops.ResourceStridedSliceAssign(
        ref=variable.handle, begin=[start] + [0] * (block.ndim - 1),
        end=[start + block.shape[0]] + list(block.shape[1:]),
        strides=[1] * block.ndim, value=block)


def _assign_columns(variable: tf.Variable, start: int, block) -> None:
    """``variable[:, start: start + block.shape[1]] = block`` for a 2-D
    variable, without reading it (as :func:`_assign_rows`)."""
    block = np.ascontiguousarray(block, np.float32)
    tf.raw_ops.ResourceStridedSliceAssign(
        ref=variable.handle, begin=[0, start],
        end=[block.shape[0], start + block.shape[1]], strides=[1, 1],
        value=block)


def _datasets(fin: h5py.File) -> List[str]:
    names = []
    fin.visititems(lambda name, obj: names.append(name)
                   if isinstance(obj, h5py.Dataset) else None)
    return names


def load_bilm_tf_hdf5(
    backbone: Backbone,
    weight_file: str | os.PathLike | h5py.File,
    embedding_weight_file: Optional[str | os.PathLike] = None,
    *,
    strict: bool = False,
) -> None:
    """Assigns bilm-tf HDF5 weights to a backbone.

    Args:
        backbone: a :class:`~bilm_keras.models.bilm_backbone.BiLMBackbone`,
            built or not. An unbuilt one is built with zeros as
            placeholders, without random initialisers, for less time and
            memory. After a failed load it holds zeros.
        weight_file: ``lm_weights.hdf5`` in bilm-tf's layout, or the file
            open (:func:`open_weight_file`), read and left open.
        embedding_weight_file: for token input, the file with the
            ``embedding`` dataset, from :func:`dump_token_embeddings`.
            Default: ``weight_file``.
        strict: also require every dataset of ``weight_file`` to have a
            variable. Without it a file with more than the model needs
            loads, such as a forward-only model from a bidirectional file.
            With it, options with fewer layers or highways than the file
            fail.

    Raises:
        WeightFileError: a dataset is missing, has the wrong shape or,
            with ``strict``, is left over. The message names the file, the
            dataset and both shapes. Nothing is assigned unless every
            dataset fits.
    """
    if not backbone.built:
        # every variable is about to be assigned: skip random initialisers
        with placeholder_weights():
            backbone.build_all()
    rows = weight_table(backbone)
    given = {"weights": weight_file}
    if embedding_weight_file is not None:
        given["embedding"] = embedding_weight_file
    files, handles = {}, {}
    with contextlib.ExitStack() as opened:
        for key, path in given.items():
            files[key], handles[key] = opened.enter_context(_reading(path))
        keys = [
            "embedding"
            if row.hdf5_path == TOKEN_EMBEDDING and "embedding" in handles
            else "weights"
            for row in rows
        ]
        # every shape is checked before anything is assigned; then the
        # datasets are read and assigned a block at a time, so loading
        # never holds a second copy of the weights
        for row, key in zip(rows, keys):
            _checked_dataset(handles[key], files[key], row)
        if strict:
            used = {row.hdf5_path for row in rows}
            extra = [name for name in _datasets(handles["weights"])
                     if name not in used]
            if extra:
                raise WeightFileError(
                    f"{files['weights']}: dataset(s) "
                    f"{name_list([repr(n) for n in extra])} have no "
                    "variable in the model the options describe (fewer "
                    "layers, highways or directions than the file)"
                )
        for row, key in zip(rows, keys):
            try:
                _assign_from_dataset(handles[key][row.hdf5_path], row)
            except OSError as e:  # a damaged chunk, a filter h5py lacks
                text = str(e).strip().splitlines()
                raise WeightFileError(
                    f"{files[key]}: dataset '{row.hdf5_path}' cannot be read "
                    f"({text[0] if text else type(e).__name__})") from None


def save_bilm_tf_hdf5(
    backbone: Backbone, outfile: str | os.PathLike
) -> None:
    """Writes a backbone's weights in bilm-tf's HDF5 layout (atomically)."""
    with atomic_hdf5(outfile) as fout:
        for row in weight_table(backbone):
            value = row.to_hdf5(np.asarray(row.variable.numpy()))
            fout.create_dataset(row.hdf5_path, data=value.astype(np.float32))


def token_table_rows(embedding_weight_file: str | os.PathLike) -> int:
    """The rows (tokens) of a token table: the 2-D dataset ``embedding`` of
    the file :func:`~bilm_keras.dump_token_embeddings` writes.

    Raises:
        WeightFileError: no such file, or no 2-D dataset ``embedding``.
    """
    path = os.fspath(embedding_weight_file)
    if not os.path.exists(path):
        raise WeightFileError(f"{path}: embedding weight file not found")
    with h5py.File(path, "r") as fin:
        ds = fin.get(TOKEN_EMBEDDING)
        if not isinstance(ds, h5py.Dataset) or len(ds.shape) != 2:
            raise WeightFileError(
                f"{path}: expected a 2-D dataset 'embedding' "
                f"(n_tokens, dim), found "
                f"{'none' if ds is None else getattr(ds, 'shape', ds)}"
            )
        return int(ds.shape[0])
