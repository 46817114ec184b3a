"""Model presets: ``options.json`` files by name (keras-hub's presets).

There is one copy of each, in the repository's top-level ``options/``,
the design card's layout. A wheel ships that folder as this package's
data, ``bilm_keras/presets/files/``, where ``setup.py`` maps it. It is
read with :mod:`importlib.resources`. A checkout, on ``PYTHONPATH`` or
installed editable, reads ``options/`` beside the package itself.

::

    from bilm_keras.presets import load_preset, options_file
    load_preset("small")            # BiLMOptions
    options_file("tiny")            # the preset's file, a path
    options_file("my/options.json") # a path stays a path

``bilm-keras train --options NAME`` and ``bilm-keras pipeline --options
NAME`` take a preset name wherever they take an ``options.json`` path.
A SPEC that is a preset's name is the preset, as a registry name is the
model in :func:`~bilm_keras.pretrained.resolve_model`. A file of that
name in the current folder is reached as ``./NAME``.

The presets (:data:`PRESETS`) are random-weight architectures to train,
not trained models. Those are :func:`bilm_keras.pretrained.list_models`.
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
import importlib.resources
import os
import pathlib

#: preset name -> what it is (each is ``options/<name>.json``)
PRESETS = {
    "tiny": "LSTM 2 x 128, projection 32, 4 small filters, 1 highway; "
            "trains in minutes on a CPU (bilm-keras pipeline's default)",
    "small": "LSTM 2 x 1024, projection 128, filters up to width 5, "
             "2 highways (as AllenNLP's elmo-small, 2x1024_128)",
    "elmo_2x4096_512_2048cnn_2xhighway":
        "the published ELMo's size: LSTM 2 x 4096, projection 512, "
        "2048 filters, 2 highways, 93.6 M parameters besides the softmax "
        "(bilm-keras train's default)",
}


class PresetError(ValueError):
    """A name that is neither a preset nor an existing options file."""


#: the files extracted from a zipped package, kept until the process ends
_EXTRACTED = contextlib.ExitStack()
atexit.register(_EXTRACTED.close)


def preset_file(name: str) -> str:
    """The path of preset ``name``'s ``options.json``.

    Raises:
        PresetError: ``name`` is no preset (the names are listed).
    """
    if name not in PRESETS:
        raise _unknown(name)
    resource = _preset_folder() / f"{name}.json"
    if not resource.is_file():
        raise FileNotFoundError(
            f"{resource}: preset {name!r} missing (an incomplete checkout "
            "or installation of bilm_keras)")
    if isinstance(resource, pathlib.Path):  # a file: a checkout or a wheel
        return str(resource)
    # a package inside a zip: a file extracted once, for this process
    return str(_EXTRACTED.enter_context(
        importlib.resources.as_file(resource)))


def _preset_folder():
    """The presets' folder: the installed package's data (a wheel's
    ``bilm_keras/presets/files/``), else the checkout's ``options/``."""
    packaged = importlib.resources.files(__package__) / "files"
    if packaged.is_dir():
        return packaged
    return pathlib.Path(__file__).resolve().parents[2] / "options"


def load_preset(name: str):
    """Preset ``name`` as :class:`~bilm_keras.options.BiLMOptions`."""
    from bilm_keras.options import BiLMOptions

    return BiLMOptions.from_json(preset_file(name))


def options_file(name_or_path: str | os.PathLike) -> str:
    """A preset name or an options file -> the options file's path.

    Args:
        name_or_path: a preset's name (``"tiny"``), else a path. A path is
            returned as given, and whoever reads it says if it is missing.

    Raises:
        PresetError: a bare name, with no folder and no ``.json``, that is
            neither a preset nor a file. The presets are listed, and a
            close name suggested.
    """
    text = os.fspath(name_or_path)
    if text in PRESETS:
        return preset_file(text)
    bare_name = not (os.sep in text or "/" in text
                     or text.lower().endswith(".json"))
    if bare_name and not os.path.exists(text):
        raise _unknown(text)
    return text


def preset_names() -> str:
    """The presets' names, for messages: ``"tiny, small, ..."``."""
    return ", ".join(PRESETS)


def _unknown(text: str) -> PresetError:
    close = difflib.get_close_matches(text, list(PRESETS), n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return PresetError(f"expected a preset name ({preset_names()}) or an "
                       f"options JSON file, found {text!r}: no such preset "
                       f"or file{hint}")
