"""Model options: bilm-tf's ``options.json``, parsed once into dataclasses.

bilm-tf passed a nested dict around and looked keys up wherever it needed
them. Here the JSON is read and validated in one place. Every error names
the file, the field, the expected and the found value. Layers receive plain
numbers from these dataclasses, never the dict.

The JSON layout is bilm-tf's own, so its ``options.json`` files load as-is::

    {"lstm": {"dim": 4096, "projection_dim": 512, "n_layers": 2,
              "cell_clip": 3, "proj_clip": 3, "use_skip_connections": true},
     "char_cnn": {"embedding": {"dim": 16}, "filters": [[1, 32], ...],
                  "n_highway": 2, "n_characters": 261,
                  "max_characters_per_token": 50, "activation": "relu"},
     "bidirectional": true, "dropout": 0.1, "n_tokens_vocab": 793471, ...}

A converted ELMoForManyLangs model (``bilm-keras convert-manylangs``) adds
one section, parsed into :class:`ManyLangsOptions` at
``BiLMOptions.manylangs`` (None for a bilm-tf model)::

     "elmoformanylangs": {"char_dic": "char.dic", "word_dic": "word.dic",
                          "word_embedding_dim": 100, "n_words": 71222}

Its paths are relative to the options file's folder, and absolute paths are
accepted. :meth:`BiLMOptions.from_json` resolves them, and
:meth:`BiLMOptions.to_json` writes them relative again.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Optional

from bilm_keras._utils.atomic_files import write_text_atomic

#: Character ids a char-CNN sees: 256 byte values + 5 specials (bilm-tf's
#: training vocabulary) and one more row for padding id 0 at inference.
N_CHARACTERS_TRAIN = 261
N_CHARACTERS_WITH_PADDING = 262

#: The name of a model's options file wherever the package writes or looks
#: for one beside other files: a save_dir, dumped or converted weights, a
#: cached download.
OPTIONS_FILE = "options.json"


class OptionsError(ValueError):
    """An options file or dict that does not describe a valid biLM."""


def _fail(source: str, field: str, expected: str, found: Any) -> OptionsError:
    return OptionsError(
        f"{source}: field '{field}': expected {expected}, found {found!r}"
    )


def _get(d: dict, key: str, source: str, prefix: str, kind, default=...):
    field = f"{prefix}{key}"
    if key not in d:
        if default is ...:
            raise OptionsError(
                f"{source}: missing field '{field}' "
                f"(expected {getattr(kind, '__name__', kind)})"
            )
        return default
    value = d[key]
    if value is None and default is None:
        return None
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        expected = "a number"
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        expected = "an integer"
    elif kind is bool:
        ok = isinstance(value, bool)
        expected = "true or false"
    elif kind is str:
        ok = isinstance(value, str)
        expected = "a string"
    else:
        ok, expected = True, ""
    if not ok:
        raise _fail(source, field, expected, value)
    return float(value) if kind is float else value


@dataclasses.dataclass(frozen=True)
class CharCNNOptions:
    """The character-CNN token embedder.

    Attributes:
        filters: ``((width, n_filters), ...)``, one convolution per entry.
        char_embedding_dim: size of each character embedding.
        n_highway: number of highway layers after the convolutions.
        n_characters: 261 as trained, or 262 as bilm-tf's "set 262 after
            training". Both describe the same model and are accepted.
        max_characters_per_token: characters per token, including the
            begin/end-of-word markers (so tokens keep ``max - 2`` bytes).
        activation: ``"relu"`` or ``"tanh"`` after max-pooling.
    """

    filters: tuple = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256),
                      (6, 512), (7, 1024))
    char_embedding_dim: int = 16
    n_highway: int = 2
    n_characters: int = N_CHARACTERS_TRAIN
    max_characters_per_token: int = 50
    activation: str = "relu"

    @property
    def n_filters(self) -> int:
        return sum(num for _, num in self.filters)

    def to_dict(self) -> dict:
        return {
            "embedding": {"dim": self.char_embedding_dim},
            "filters": [list(f) for f in self.filters],
            "n_highway": self.n_highway,
            "n_characters": self.n_characters,
            "max_characters_per_token": self.max_characters_per_token,
            "activation": self.activation,
        }


@dataclasses.dataclass(frozen=True)
class LSTMOptions:
    """The LSTM stacks (one per direction).

    Attributes:
        dim: LSTM cell size.
        projection_dim: size of each layer's (projected) output.
        n_layers: layers per direction.
        cell_clip: clip the cell state to ``[-cell_clip, cell_clip]``, or None.
        proj_clip: clip the projected output likewise, or None.
        use_skip_connections: add each layer's input to its output for
            layers above the first.
    """

    dim: int = 4096
    projection_dim: int = 512
    n_layers: int = 2
    cell_clip: Optional[float] = 3.0
    proj_clip: Optional[float] = 3.0
    use_skip_connections: bool = True

    def to_dict(self) -> dict:
        return {
            "dim": self.dim,
            "projection_dim": self.projection_dim,
            "n_layers": self.n_layers,
            "cell_clip": self.cell_clip,
            "proj_clip": self.proj_clip,
            "use_skip_connections": self.use_skip_connections,
        }


@dataclasses.dataclass(frozen=True)
class ManyLangsOptions:
    """The ``elmoformanylangs`` section of a converted ELMoForManyLangs model.

    Its char ids come from ``char.dic``, whole Unicode characters, and its
    optional word part from ``word.dic``, see
    :class:`~bilm_keras.data.manylangs_batcher.ManyLangsBatcher`. The
    word embedding is concatenated with the char-CNN output before the
    projection, which is always present.

    Attributes:
        char_dic: path of ``char.dic`` (resolved against the options file's
            folder by :meth:`BiLMOptions.from_json`).
        word_dic: path of ``word.dic``, or None for a model without a word
            part.
        word_embedding_dim: size of a word embedding, 0 for no word part.
        n_words: rows of the word embedding in the weight file, without
            the padding row the model adds. 0 without a word part.
        base_dir: the folder the paths were resolved against, None when
            parsed from a dict without one. Not part of the JSON.
    """

    char_dic: str
    word_dic: Optional[str] = None
    word_embedding_dim: int = 0
    n_words: int = 0
    base_dir: Optional[str] = dataclasses.field(
        default=None, compare=False, repr=False)

    @property
    def has_word_part(self) -> bool:
        return self.word_embedding_dim > 0

    def to_dict(self, relative_to: Optional[str] = None) -> dict:
        """The JSON section.

        An absolute path inside ``relative_to``, by default
        :attr:`base_dir`, is written relative to it. Any other path is
        written as it is.
        """
        folder = self.base_dir if relative_to is None else relative_to

        def written(path):
            if path is None or folder is None or not os.path.isabs(path):
                return path
            rel = os.path.relpath(path, folder)
            return path if rel.startswith(os.pardir) else rel

        return {
            "char_dic": written(self.char_dic),
            "word_dic": written(self.word_dic),
            "word_embedding_dim": self.word_embedding_dim,
            "n_words": self.n_words,
        }


#: the JSON key of :class:`ManyLangsOptions`
MANYLANGS_SECTION = "elmoformanylangs"


def _parse_manylangs(d, source: str,
                     base_dir: Optional[str]) -> ManyLangsOptions:
    p = MANYLANGS_SECTION + "."
    if not isinstance(d, dict):
        raise _fail(source, MANYLANGS_SECTION, "a JSON object", d)
    char_dic = _get(d, "char_dic", source, p, str)
    word_dic = _get(d, "word_dic", source, p, str, None)
    word_dim = _get(d, "word_embedding_dim", source, p, int, 0)
    n_words = _get(d, "n_words", source, p, int, 0)
    if not char_dic:
        raise _fail(source, p + "char_dic", "a path", char_dic)
    if word_dim < 0:
        raise _fail(source, p + "word_embedding_dim", "an integer >= 0",
                    word_dim)
    if word_dim > 0:
        if not word_dic:
            raise _fail(source, p + "word_dic",
                        "a path (word_embedding_dim > 0)", word_dic)
        if n_words < 1:
            raise _fail(source, p + "n_words",
                        "a positive integer (word_embedding_dim > 0)",
                        n_words)
    else:
        if word_dic is not None:
            raise _fail(source, p + "word_dic",
                        "null (word_embedding_dim is 0)", word_dic)
        if n_words != 0:
            raise _fail(source, p + "n_words", "0 (word_embedding_dim is 0)",
                        n_words)

    def resolved(path):
        if path is None or base_dir is None:
            return path
        return os.path.normpath(os.path.join(base_dir, path))

    return ManyLangsOptions(
        char_dic=resolved(char_dic), word_dic=resolved(word_dic),
        word_embedding_dim=word_dim, n_words=n_words, base_dir=base_dir,
    )


def _parse_lstm(d, source: str) -> LSTMOptions:
    """The ``lstm`` section."""
    if not isinstance(d, dict):
        raise _fail(source, "lstm", "a JSON object", d)
    p = "lstm."
    lstm = LSTMOptions(
        dim=_get(d, "dim", source, p, int),
        projection_dim=_get(d, "projection_dim", source, p, int),
        n_layers=_get(d, "n_layers", source, p, int, 1),
        cell_clip=_get(d, "cell_clip", source, p, float, None),
        proj_clip=_get(d, "proj_clip", source, p, float, None),
        use_skip_connections=_get(
            d, "use_skip_connections", source, p, bool, False
        ),
    )
    for name in ("dim", "projection_dim", "n_layers"):
        if getattr(lstm, name) < 1:
            raise _fail(source, p + name, "a positive integer",
                        getattr(lstm, name))
    return lstm


def _parse_char_cnn(d, source: str, lstm: LSTMOptions, *,
                    manylangs: bool) -> CharCNNOptions:
    """The ``char_cnn`` section, checked against the LSTMs it feeds (an
    ELMoForManyLangs model's, ``manylangs``, has its own char table and
    always projects)."""
    p = "char_cnn."
    if not isinstance(d, dict):
        raise _fail(source, "char_cnn", "a JSON object", d)
    emb = _get(d, "embedding", source, p, dict)
    if not isinstance(emb, dict):
        raise _fail(source, p + "embedding", '{"dim": N}', emb)
    filters = _get(d, "filters", source, p, list)
    if (
        not isinstance(filters, list)
        or not filters
        or not all(
            isinstance(f, (list, tuple)) and len(f) == 2
            and all(isinstance(v, int) and v > 0 for v in f)
            for f in filters
        )
    ):
        raise _fail(source, p + "filters",
                    "a non-empty list of [width, n_filters]", filters)
    char_cnn = CharCNNOptions(
        filters=tuple((int(w), int(n)) for w, n in filters),
        char_embedding_dim=_get(emb, "dim", source, p + "embedding.", int),
        n_highway=_get(d, "n_highway", source, p, int, 0) or 0,
        n_characters=_get(d, "n_characters", source, p, int),
        max_characters_per_token=_get(
            d, "max_characters_per_token", source, p, int
        ),
        activation=_get(d, "activation", source, p, str),
    )
    if manylangs:
        # char.dic's rows + the padding row of the +1-shifted ids
        if char_cnn.n_characters < 2:
            raise _fail(source, p + "n_characters",
                        "rows of char.dic + 1 (at least 2)",
                        char_cnn.n_characters)
    elif char_cnn.n_characters not in (N_CHARACTERS_TRAIN,
                                       N_CHARACTERS_WITH_PADDING):
        raise _fail(source, p + "n_characters", "261 or 262",
                    char_cnn.n_characters)
    if char_cnn.activation not in ("relu", "tanh"):
        raise _fail(source, p + "activation", "'relu' or 'tanh'",
                    char_cnn.activation)
    widest = max(w for w, _ in char_cnn.filters)
    # ELMoForManyLangs' <bos> token row takes 7 slots (upstream asserts
    # len('<bos>') + 2 <= max_characters_per_token)
    least = max(7 if manylangs else 3, widest)
    if char_cnn.max_characters_per_token < least:
        raise _fail(
            source, p + "max_characters_per_token",
            f"at least {least} (begin/end-of-word markers and the widest "
            "filter)",
            char_cnn.max_characters_per_token,
        )
    # an ELMoForManyLangs model always projects (also upwards)
    if not manylangs and char_cnn.n_filters < lstm.projection_dim:
        raise _fail(
            source, p + "filters",
            f"at least lstm.projection_dim={lstm.projection_dim} filters "
            "in total",
            char_cnn.n_filters,
        )
    return char_cnn


def _parse_top_level(d, source: str, defaults) -> dict:
    """The top-level fields (the model's and training's), as keyword
    arguments of :class:`BiLMOptions` (``defaults``: its defaults)."""
    kw = {}
    for name, kind in (
        ("bidirectional", bool), ("dropout", float),
        ("n_negative_samples_batch", int),
        ("share_embedding_softmax", bool), ("all_clip_norm_val", float),
        ("unroll_steps", int), ("n_epochs", int), ("batch_size", int),
        ("learning_rate", float),
        ("reset_states_at_sentence_start", bool),
    ):
        kw[name] = _get(d, name, source, "", kind, getattr(defaults, name))
    for name in ("n_tokens_vocab", "n_train_tokens", "token_embedding_dim"):
        kw[name] = _get(d, name, source, "", int, None)
    return kw


@dataclasses.dataclass(frozen=True)
class BiLMOptions:
    """A whole biLM: token embedder, LSTMs and training settings.

    ``char_cnn`` is None for a token-input model. ``manylangs`` describes
    a converted ELMoForManyLangs model (None for bilm-tf's). The training
    fields have bilm-tf's meaning and defaults. Inference ignores them.
    """

    lstm: LSTMOptions = LSTMOptions()
    char_cnn: Optional[CharCNNOptions] = CharCNNOptions()
    bidirectional: bool = True
    dropout: float = 0.1
    n_tokens_vocab: Optional[int] = None
    n_negative_samples_batch: int = 8192
    share_embedding_softmax: bool = False
    all_clip_norm_val: float = 10.0
    unroll_steps: int = 20
    n_epochs: int = 10
    batch_size: int = 128
    n_train_tokens: Optional[int] = None
    learning_rate: float = 0.2
    token_embedding_dim: Optional[int] = None  # token input only
    # each sentence predicted from zero LSTM states in training and
    # evaluation, as ELMo embeds it (False: bilm-tf's carried states)
    reset_states_at_sentence_start: bool = True
    manylangs: Optional[ManyLangsOptions] = None

    @property
    def use_character_inputs(self) -> bool:
        return self.char_cnn is not None

    def replace(self, **changes) -> "BiLMOptions":
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ I/O
    @classmethod
    def from_dict(cls, d: dict, source: str = "<options>",
                  base_dir: Optional[str] = None) -> "BiLMOptions":
        """Parse bilm-tf's nested options dict, with errors naming ``source``.

        Args:
            base_dir: the folder that relative paths, the
                ``elmoformanylangs`` dictionaries, are resolved against.
                None keeps them as given.
        """
        if not isinstance(d, dict):
            raise _fail(source, "<root>", "a JSON object", type(d).__name__)
        lstm = _parse_lstm(_get(d, "lstm", source, "", dict), source)
        manylangs = None
        if d.get(MANYLANGS_SECTION) is not None:
            manylangs = _parse_manylangs(d[MANYLANGS_SECTION], source,
                                         base_dir)
            if d.get("char_cnn") is None:
                raise OptionsError(
                    f"{source}: missing field 'char_cnn' (expected a JSON "
                    f"object: an '{MANYLANGS_SECTION}' model reads "
                    "characters)")
        char_cnn = None
        if d.get("char_cnn") is not None:
            char_cnn = _parse_char_cnn(d["char_cnn"], source, lstm,
                                       manylangs=manylangs is not None)
        top = _parse_top_level(d, source, cls())
        # bilm-tf reads the token embedding size from lstm.projection_dim
        if char_cnn is None and top["token_embedding_dim"] is None:
            top["token_embedding_dim"] = lstm.projection_dim
        if char_cnn is not None and top["share_embedding_softmax"]:
            raise _fail(source, "share_embedding_softmax",
                        "false for a char-CNN model (bilm-tf's rule)", True)
        return cls(lstm=lstm, char_cnn=char_cnn, manylangs=manylangs, **top)

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> "BiLMOptions":
        """Read bilm-tf's ``options.json``."""
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except FileNotFoundError:
            raise OptionsError(f"{path}: options file not found") from None
        except json.JSONDecodeError as e:
            raise OptionsError(f"{path}: not valid JSON ({e})") from None
        except UnicodeDecodeError as e:
            raise OptionsError(f"{path}: not UTF-8 text (byte {e.start}: "
                               f"{e.reason})") from None
        return cls.from_dict(
            d, source=path, base_dir=os.path.dirname(os.path.abspath(path)))

    def to_dict(self, relative_to: Optional[str] = None) -> dict:
        """bilm-tf's nested dict (plus ``elmoformanylangs``: its paths
        relative to ``relative_to``, default the folder they were read
        from, see :meth:`ManyLangsOptions.to_dict`)."""
        d = {"lstm": self.lstm.to_dict()}
        if self.char_cnn is not None:
            d["char_cnn"] = self.char_cnn.to_dict()
        if self.manylangs is not None:
            d[MANYLANGS_SECTION] = self.manylangs.to_dict(relative_to)
        for f in dataclasses.fields(self):
            if f.name not in ("lstm", "char_cnn", "manylangs"):
                value = getattr(self, f.name)
                if value is not None:
                    d[f.name] = value
        return d

    def to_json(self, path: str | os.PathLike) -> None:
        """Write bilm-tf-compatible ``options.json`` atomically.

        The ``elmoformanylangs`` paths inside its folder are written
        relative to it.
        """
        folder = os.path.dirname(os.path.abspath(os.fspath(path)))
        text = json.dumps(self.to_dict(relative_to=folder), indent=2,
                          sort_keys=True) + "\n"
        write_text_atomic(path, text)

