"""``bilm-keras models``: every registered model with its language, size
and cache state, from the cache alone (the server stopped), without
TensorFlow."""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments)

import re

from model_server import (  # noqa: F401 (fixtures)
    cache_dir,
    mirrored,
    model_server,
    served_files,
)

from helpers import run_command

from bilm_keras import cli
from bilm_keras.pretrained import registered_models, resolve_model
from bilm_keras.pretrained.model_cache import folder_bytes


def _rows(out):
    """``{name: the table's line}``."""
    return {line.split()[0]: line for line in out.splitlines()
            if line and line.split()[0] in registered_models()}


def test_every_model_and_what_is_cached(mirrored, cache_dir, capsys):
    cached = resolve_model("manylangs-zh")
    mirrored.stop()  # listing needs no network
    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert list(rows) == list(registered_models())  # registry order
    size = folder_bytes(cached.directory) / 1e6
    assert re.fullmatch(r"manylangs-zh +zh +Chinese \(traditional\) +- +"
                        rf"elmoformanylangs +{size:,.1f} MB",
                        rows["manylangs-zh"])
    assert re.fullmatch(r"elmo-original +en +English +93\.6 M +bilm-tf +no",
                        rows["elmo-original"])
    assert sum(row.endswith("  no") for row in rows.values()) == len(
        rows) - 1
    assert (f"{len(rows)} models; 1 cached ({size:,.1f} MB) in "
            f"{cache_dir} ($BILM_KERAS_CACHE)") in out
    # --cached: that one alone
    assert cli.main(["models", "--cached"]) == 0
    assert list(_rows(capsys.readouterr().out)) == ["manylangs-zh"]


def test_an_empty_cache(cache_dir, capsys):
    assert cli.main(["models", "--cached"]) == 0
    assert capsys.readouterr().out.startswith("no model is cached\n")
    assert not cache_dir.exists()  # listing writes nothing


def test_models_imports_no_tensorflow(cache_dir):
    code, heavy, out, err = run_command(["models"])
    assert code == 0, err
    assert heavy == []  # no TensorFlow, Keras, numpy or h5py
    assert len(_rows(out)) == len(registered_models())
