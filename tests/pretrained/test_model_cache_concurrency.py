"""Two processes that want the same model at once, with an empty cache:
both succeed, the model is downloaded once (the second waits on the
entry's lock) and one good copy is left. And without a lock (a file
system without flock), the atomic rename still keeps one copy."""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments: pytest's way to share them without a second conftest.py)

import json
import os
import subprocess
import sys

import pytest
from model_server import (  # noqa: F401 (fixtures)
    BILM_TF_ZIP,
    ZH_ZIP,
    cache_contents,
    cache_dir,
    model_server,
    served_files,
)

from bilm_keras.pretrained import PretrainedModelError
from bilm_keras.pretrained.model_cache import (
    install_entry,
    is_complete,
    write_manifest,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# resolving, downloading and converting never import TensorFlow
CHILD = """
import dataclasses, json, sys
from bilm_keras.pretrained import resolve_model
model = resolve_model(sys.argv[1])
assert "tensorflow" not in sys.modules and "keras" not in sys.modules
print(json.dumps(dataclasses.asdict(model)))
"""


def _both_at_once(spec, cache, mirror, timeout=120):
    env = dict(os.environ, BILM_KERAS_CACHE=str(cache),
               BILM_KERAS_MODEL_MIRROR=mirror)
    # fresh interpreters, not helpers.python_argv: they assert that
    # resolving a model imports no TensorFlow
    children = [subprocess.Popen([sys.executable, "-c", CHILD, spec],
                                 cwd=REPO, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
    results = []
    for child in children:
        out, err = child.communicate(timeout=timeout)
        assert child.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _files(folder):
    return {name: open(os.path.join(folder, name), "rb").read()
            for name in sorted(os.listdir(folder))
            if name != "bilm_keras_model.json"}


@pytest.mark.slow
def test_two_processes_one_download_one_copy(model_server, cache_dir,
                                              bilm_fixtures):
    # the body takes 1.5 s: the second process arrives while the first
    # downloads, finds the lock taken, waits, then uses the first's model
    model_server.slow[BILM_TF_ZIP] = 1.5
    url = model_server.url + BILM_TF_ZIP
    first, second = _both_at_once(url, cache_dir, "")
    assert first == second
    assert model_server.requests[BILM_TF_ZIP] == 1
    contents = cache_contents(cache_dir)
    assert len(contents["models"]) == 1 and contents["tmp"] == []
    with open(first["weight_file"], "rb") as f:
        assert f.read() == (bilm_fixtures / "model"
                            / "lm_weights.hdf5").read_bytes()


@pytest.mark.slow
def test_two_processes_convert_a_manylangs_model_once(model_server,
                                                      cache_dir):
    model_server.slow[ZH_ZIP] = 1.5
    first, second = _both_at_once("manylangs-zh", cache_dir,
                                  model_server.url)
    assert first == second
    assert first["format"] == "elmoformanylangs"
    assert model_server.requests[ZH_ZIP] == 1
    assert cache_contents(cache_dir) == {"models": ["manylangs-zh"],
                                         "tmp": []}


def _built(folder, payload):
    os.makedirs(folder)
    with open(os.path.join(folder, "lm_weights.hdf5"), "w") as f:
        f.write(payload)
    write_manifest(folder, {"name": payload})
    return folder


def test_without_a_lock_the_first_rename_wins(tmp_path):
    entry = str(tmp_path / "models" / "m")
    install_entry(_built(str(tmp_path / "tmp" / "a"), "first"), entry)
    later = _built(str(tmp_path / "tmp" / "b"), "second")
    install_entry(later, entry)  # taken: kept as it is, no error
    assert is_complete(entry)
    assert _files(entry) == {"lm_weights.hdf5": b"first"}
    assert os.path.isdir(later)  # left for its staging folder's removal


def test_an_incomplete_entry_is_named(tmp_path):
    entry = tmp_path / "models" / "m"
    entry.mkdir(parents=True)
    (entry / "lm_weights.hdf5").write_text("half")
    with pytest.raises(PretrainedModelError,
                       match="expected a complete cached model or no "
                             "folder, found an incomplete one; remove it"):
        install_entry(_built(str(tmp_path / "tmp" / "a"), "x"), str(entry))
