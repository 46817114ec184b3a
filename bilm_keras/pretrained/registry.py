"""The published ELMo models, by name: the registry, as package data.

``registry.json``, beside this module and shipped in the wheel, holds one
row per model. :func:`registered_models` reads and checks it once::

    from bilm_keras.pretrained.registry import registered_model
    registered_model("manylangs-zh").archive_url
    # 'https://vectors.nlpl.eu/repository/11/179.zip'

Six kinds of rows, by where the publisher keeps the files:

* ``bilm-tf``, AllenNLP's English models: an options JSON and a weights
  HDF5, two URLs, ``options_url`` and ``weight_url``.
* ``elmoformanylangs``, HIT-SCIR's 44 languages on the NLPL repository and
  their simplified-Chinese model: one archive, ``archive_url``, holding
  ``config.json``, the dictionaries and the ``.pkl`` state dicts.
* ``paddle-fluid``, PaddlePaddle's Chinese encyclopedia model: one archive
  holding a Fluid ``save_persistables`` checkpoint, word input. Its
  vocabulary is published apart, and ``vocab_note`` says where.
* ``bilm-tf-archive``, NLPL's ELMo zips and EMBEDDIA's tarballs: one
  archive holding an options JSON and a weights HDF5, whatever their names.
* ``tfhub-tf1``, Google's ``google/elmo`` on Kaggle and DeepPavlov's
  Russian modules: one tarball holding a TF1 Hub module, converted on first
  use.
* ``tf1-checkpoint``, DeepPavlov's LM-ready archives: one archive holding
  an options JSON and a bilm-tf TF1 training checkpoint, whose weights
  are dumped on first use.

``ships_vocabulary`` says whether an archive holds the model's vocabulary
where that is known before it is downloaded, so that a call that needs
one is refused first (:func:`check_before_download`).

Each row names its language, by name and ISO 639-1 code, else ISO 639-3.
It names where the model comes from, the license and the paper to cite.

``BILM_KERAS_MODEL_MIRROR=BASE`` replaces the scheme and host of every
registry URL and keeps its path, see :func:`mirrored_url`. The base may be
an organisation's mirror, an air-gapped copy or the tests' local server.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import json
import os
import re
import urllib.parse

from bilm_keras.pretrained.errors import PretrainedModelError

#: the environment variable naming a mirror of the registry's URLs
MIRROR_ENV = "BILM_KERAS_MODEL_MIRROR"

#: the formats a published model comes in
FORMATS = ("bilm-tf", "elmoformanylangs", "paddle-fluid", "bilm-tf-archive",
           "tf1-checkpoint", "tfhub-tf1")

REGISTRY_FILE = "registry.json"

#: the formats whose files never hold a vocabulary
NO_VOCABULARY_FORMATS = ("bilm-tf", "elmoformanylangs", "tfhub-tf1")

#: what a model name looks like (it is also a cache folder's name)
_NAME = re.compile(r"^[a-z][a-z0-9.-]*$")


@dataclasses.dataclass(frozen=True)
class RegisteredModel:
    """One published model, a row of ``registry.json``.

    Args:
        name: the name to ask for, e.g. ``"elmo-original"``,
            ``"manylangs-zh"``.
        language: the language's name, e.g. ``"Chinese (traditional)"``.
        language_code: ISO 639-1, else ISO 639-3, e.g. ``"grc"``.
        format: one of :data:`FORMATS`, e.g. ``"bilm-tf"`` or
            ``"elmoformanylangs"``, converted once, on first use.
        description: what it was trained on.
        source: who publishes it, with their page.
        license: the license line.
        citation: the paper(s) to cite.
        options_url / weight_url: a ``bilm-tf`` model's two files.
        archive_url: an ``elmoformanylangs`` model's archive.
        archive_parts: an archive published in pieces, to be joined in
            this order, instead of ``archive_url``. t-systems'
            ``.tgz.part-00`` ... are such pieces.
        parameters_millions: the model's size in millions of parameters
            where its publisher states it, else None.
        download_megabytes: what is downloaded, its files or archive, in
            MB of 10**6 bytes, where known, else None.
        vocab_note: for a word-input model whose vocabulary is not in its
            archive, where to get it: the ``vocab_file`` it must be used
            with. Else None.
        ships_vocabulary: whether the model's files hold its vocabulary,
            the default ``vocab_file`` of token input. False for the
            formats that hold none (``bilm-tf``, ``elmoformanylangs``,
            ``tfhub-tf1``) and with a ``vocab_note``. None where it is
            known only once the archive is read.
        note: what is not known about the model, or how its files
            differ from the others'. Else None.
        aliases: other names that ask for it, such as readable names for
            numbered ones, e.g. ``norelmo-30`` for ``nlpl-217``. Its
            cache folder is named after ``name``.
        alignment_url: a ``bilm-tf`` model's cross-lingual alignment
            matrix, a numpy array ``torch.save`` wrote, kept beside its
            weights as ``alignment.pth``. Else None.
    """

    name: str
    language: str
    language_code: str
    format: str
    description: str
    source: str
    license: str
    citation: str
    options_url: str | None = None
    weight_url: str | None = None
    archive_url: str | None = None
    archive_parts: tuple[str, ...] | None = None
    parameters_millions: float | None = None
    download_megabytes: float | None = None
    vocab_note: str | None = None
    note: str | None = None
    aliases: tuple[str, ...] = ()
    alignment_url: str | None = None
    ships_vocabulary: bool | None = None

    @property
    def takes_words(self) -> bool:
        """Whether the model reads words, not characters: a Paddle Fluid
        model (the baike model). Its vocabulary is its input."""
        return self.format == "paddle-fluid"

    @property
    def urls(self) -> tuple[str, ...]:
        """Every URL the model is downloaded from."""
        return tuple(url for url in (self.options_url, self.weight_url,
                                     self.archive_url,
                                     *(self.archive_parts or ()),
                                     self.alignment_url) if url)


def _check_row(row: dict, index: int, source: str) -> RegisteredModel:
    where = f"{source}: models[{index}]"
    fields = {f.name for f in dataclasses.fields(RegisteredModel)}
    unknown = sorted(set(row) - fields)
    if unknown:
        raise PretrainedModelError(
            f"{where}: expected the fields {sorted(fields)}, found "
            f"unknown {unknown}")
    for field in ("archive_parts", "aliases"):
        if isinstance(row.get(field), list):
            row = {**row, field: tuple(row[field])}
    try:
        model = RegisteredModel(**row)
    except TypeError as e:
        raise PretrainedModelError(f"{where}: {e}") from None
    for name in (model.name, *model.aliases):
        if not isinstance(name, str) or not _NAME.match(name):
            raise PretrainedModelError(
                f"{where}: field 'name' or 'aliases': expected lower-case "
                f"letters, digits, '.' and '-', found {name!r}")
    if model.format not in FORMATS:
        raise PretrainedModelError(
            f"{where} ({model.name}): field 'format': expected one of "
            f"{FORMATS}, found {model.format!r}")
    if model.format == "bilm-tf":
        files_ok = bool(model.options_url and model.weight_url
                        and not model.archive_url)
        expected = "options_url and weight_url, no archive_url"
    else:
        files_ok = (bool(model.archive_url) != bool(model.archive_parts)
                    and not model.options_url and not model.weight_url
                    and not model.alignment_url)
        expected = "archive_url or archive_parts alone"
    if not files_ok:
        raise PretrainedModelError(
            f"{where} ({model.name}): a {model.format} model: expected "
            f"{expected}")
    for url in model.urls:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise PretrainedModelError(
                f"{where} ({model.name}): expected http(s) URLs, found "
                f"{url!r}")
    ships_none = (model.format in NO_VOCABULARY_FORMATS
                  or model.vocab_note is not None)
    if ships_none:
        if model.ships_vocabulary:
            raise PretrainedModelError(
                f"{where} ({model.name}): field 'ships_vocabulary': "
                f"expected false or absent (a {model.format} model"
                f"{' with a vocab_note' if model.vocab_note else ''}), "
                "found true")
        model = dataclasses.replace(model, ships_vocabulary=False)
    return model


@functools.cache
def registered_models() -> dict[str, RegisteredModel]:
    """Every registered model, by name, in the registry's order.

    Raises:
        PretrainedModelError: a row that does not fit (a packaging bug).
    """
    resource = importlib.resources.files(__package__) / REGISTRY_FILE
    source = f"{__package__}/{REGISTRY_FILE}"
    rows = json.loads(resource.read_text(encoding="utf-8"))["models"]
    models: dict[str, RegisteredModel] = {}
    taken: set[str] = set()
    for index, row in enumerate(rows):
        model = _check_row(row, index, source)
        for name in (model.name, *model.aliases):
            if name in taken:
                raise PretrainedModelError(
                    f"{source}: models[{index}]: name {name!r} is "
                    "registered twice")
            taken.add(name)
        models[model.name] = model
    return models


@functools.cache
def _by_alias() -> dict[str, RegisteredModel]:
    return {alias: model for model in registered_models().values()
            for alias in model.aliases}


def registered_model(name: str) -> RegisteredModel | None:
    """The model registered as ``name`` or with ``name`` as an alias, or
    None."""
    return registered_models().get(name) or _by_alias().get(name)


def check_before_download(spec: str | os.PathLike, *,
                          vocab_given: bool, vocab_flag: str | None,
                          token_input: bool = False,
                          char_cnn: bool = False) -> None:
    """Refuses a registered model that cannot work for a call, from its
    registry row alone, before anything is downloaded.

    Args:
        spec: the SPEC as given. Only a registry name is checked: any
            other SPEC's files say what they hold once resolved.
        vocab_given: whether the call gives a vocabulary.
        vocab_flag: what gives the call a vocabulary, e.g.
            ``"--vocab_file"`` or ``"vocab_file="``. None where the call
            takes none (``serve``).
        token_input: whether the call reads token ids, which need a
            vocabulary whatever the model reads.
        char_cnn: whether the call needs the model's char-CNN
            (``dump-tokens``).

    Raises:
        PretrainedModelError: one line naming the model, the part it
            lacks and the flag that supplies it.
    """
    row = registered_model(os.fspath(spec))
    if row is None:
        return
    if char_cnn and row.takes_words:
        raise PretrainedModelError(
            f"{spec}: the model takes words: it has no char-CNN to embed "
            "tokens with (use a model of character input)")
    needs = ("its word input" if row.takes_words
             else "token input" if token_input else None)
    if needs is None or vocab_given or row.ships_vocabulary is not False:
        return
    where = f" ({row.vocab_note})" if row.vocab_note else ""
    supply = (f"pass it with {vocab_flag}" if vocab_flag is not None
              else "give a model folder holding it as vocab*.txt")
    raise PretrainedModelError(
        f"{spec}: no vocabulary: the model ships none, and {needs} needs "
        f"one: {supply}{where}")


def mirror_from_environment() -> str | None:
    """``$BILM_KERAS_MODEL_MIRROR``, or None where unset or empty."""
    return os.environ.get(MIRROR_ENV) or None


def mirrored_url(url: str, mirror: str | None) -> str:
    """``url`` with its scheme and host replaced by ``mirror``'s.

    The mirror's path, if any, is put in front of ``url``'s path. With
    ``mirror`` None it is ``url`` itself.

    >>> mirrored_url("https://vectors.nlpl.eu/repository/11/179.zip",
    ...              "https://mirror.example.org/elmo")
    'https://mirror.example.org/elmo/repository/11/179.zip'

    Raises:
        PretrainedModelError: ``mirror`` is not an http(s) base URL.
    """
    if not mirror:
        return url
    base = urllib.parse.urlsplit(mirror)
    if base.scheme not in ("http", "https") or not base.netloc \
            or base.query or base.fragment:
        raise PretrainedModelError(
            f"{MIRROR_ENV}={mirror!r}: expected an http(s) base URL such as "
            "https://mirror.example.org or http://127.0.0.1:8000/models")
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(
        (base.scheme, base.netloc, base.path.rstrip("/") + parts.path,
         parts.query, ""))
