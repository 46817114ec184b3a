"""The package works as installed: a wheel built from
this checkout, installed into a fresh venv, runs ``bilm-keras --help``,
``models``, ``pipeline`` (its presets, the top-level ``options/``, are
package data) and ``embed --model elmo-small`` (from a local mirror) in an
empty folder elsewhere; installed editable, the same sources read the
presets from their ``options/``.

Offline and quick to set up: the wheel is built without build isolation
and installed with ``--no-deps``, by the test venv's pip (``pip --python``,
pip >= 22.3: the venv gets no pip of its own, which takes longer to
install than the package); the venv reaches the test venv's dependencies
(TensorFlow, h5py, numpy) through a ``.pth`` file, whose folder's own
``.pth`` files (this checkout's editable install) are not run. So every
file of OUR package comes from the wheel, and the test checks that it
does.
"""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments)

import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import h5py
import pytest
from model_server import (  # noqa: F401 (fixtures)
    cache_dir,
    mirrored,
    model_server,
    served_files,
)

from helpers import REPO_ROOT

pytestmark = pytest.mark.slow  # a wheel build, a venv, the pipeline

#: what a source distribution of the package holds (setup.cfg reads
#: README.md as the long description; setup.py maps options/, the presets,
#: into the package)
SOURCES = ("bilm_keras", "options", "setup.py", "setup.cfg",
           "pyproject.toml", "README.md")


def _run(args, **kwargs):
    proc = subprocess.run([str(a) for a in args], capture_output=True,
                          text=True, timeout=900, **kwargs)
    assert proc.returncode == 0, (
        f"{args}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n"
        f"{proc.stderr[-3000:]}")
    return proc


def _copy_sources(source: pathlib.Path) -> None:
    """The package's sources into ``source`` (a build writes ``build/``
    and ``*.egg-info`` beside them)."""
    source.mkdir()
    for name in SOURCES:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns(
                "__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, source / name)


def _fresh_venv(folder: pathlib.Path) -> pathlib.Path:
    """A venv without pip that reaches the test venv's packages (the
    dependencies) through a ``.pth`` file; returns its python."""
    _run([sys.executable, "-m", "venv", "--without-pip", folder])
    python = folder / "bin" / "python"
    site = _run([python, "-c", "import sysconfig; "
                 "print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    pathlib.Path(site, "test_venv_dependencies.pth").write_text(ours + "\n")
    return python


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    """A wheel of this checkout, built from a copy."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    _copy_sources(source)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps",
          "--no-build-isolation", "--no-index", "-q", "-w", root / "dist",
          source])
    [built] = (root / "dist").glob("bilm_keras-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> pathlib.Path:
    """A fresh venv with the wheel installed (no dependencies: those come
    from the test venv's site-packages through a ``.pth`` file)."""
    folder = tmp_path_factory.mktemp("venv") / "venv"
    python = _fresh_venv(folder)
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q",
          "--no-deps", "--no-index", wheel])
    return folder


@pytest.fixture
def elsewhere(tmp_path, mirrored, cache_dir) -> dict:
    """An empty folder to run in, and the environment: no PYTHONPATH, the
    mirror and an empty cache."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", BILM_KERAS_MODEL_MIRROR=mirrored.url,
               BILM_KERAS_CACHE=str(cache_dir))
    return dict(cwd=folder, env=env)


def test_the_wheel_holds_the_package_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    presets = sorted(n for n in names if n.endswith(".json")
                     and n.startswith("bilm_keras/presets/"))
    assert presets == [f"bilm_keras/presets/files/{p.name}"
                       for p in sorted((REPO_ROOT / "options").glob("*.json"))]
    assert "bilm_keras/pretrained/registry.json" in names
    assert not [n for n in names if n.startswith(("options/", "tests/"))]


@pytest.mark.nightly  # an installed wheel in a fresh process
def test_the_installed_command_runs_from_an_empty_folder(venv, elsewhere,
                                                         model_dir):
    command = venv / "bin" / "bilm-keras"
    python = venv / "bin" / "python"
    # our files come from the wheel, not the checkout
    where = _run([python, "-c", "import bilm_keras.presets as p; "
                  "print(p.preset_file('tiny'))"], **elsewhere).stdout
    assert where.startswith(str(venv)), where
    assert not where.startswith(str(REPO_ROOT))

    assert _run([command, "--help"], **elsewhere).stdout.startswith(
        "usage: bilm-keras")
    listed = _run([command, "models"], **elsewhere).stdout
    # every row of the registry the wheel ships (read here as plain JSON)
    rows = json.loads((REPO_ROOT / "bilm_keras" / "pretrained"
                       / "registry.json").read_text(encoding="utf-8"))
    n_models = len(rows["models"])
    assert "manylangs-zh" in listed and "paddle-baike-zh" in listed
    assert f"{n_models} models; 0 cached" in listed

    # the end-to-end demo, in its smallest size, with the tiny preset
    done = _run([command, "pipeline", "--out_dir", "run",
                 "--max_sentences", "200", "--n_epochs", "1"], **elsewhere)
    assert "pipeline done" in done.stdout
    assert "ELMo layers (3, " in done.stdout
    run = elsewhere["cwd"] / "run"
    assert (run / "model" / "lm_weights.hdf5").is_file()

    # a published model by name, from the mirror
    words = (model_dir / "vocab_test.txt").read_text("utf-8").split()[3:9]
    (elsewhere["cwd"] / "text.txt").write_text(" ".join(words) + "\n")
    wrote = _run([command, "embed", "--model", "elmo-small",
                  "--dataset_file", "text.txt", "--outfile", "elmo.hdf5"],
                 **elsewhere).stdout
    assert "wrote 1 sentences to elmo.hdf5" in wrote
    with h5py.File(elsewhere["cwd"] / "elmo.hdf5", "r") as f:
        assert f["0"].shape == (3, 6, 32)


def test_an_editable_install_reads_the_presets_from_options(
        tmp_path_factory, elsewhere):
    """``pip install -e`` of a copy of this checkout: from elsewhere, the
    presets are the copy's ``options/`` files, and ``bilm-keras train``
    takes one by name."""
    root = tmp_path_factory.mktemp("editable")
    source = root / "source"
    _copy_sources(source)
    python = _fresh_venv(root / "venv")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q",
          "--no-deps", "--no-index", "--no-build-isolation", "-e", source])
    where = _run([python, "-c", "import bilm_keras.presets as p; "
                  "print(*(p.preset_file(n) for n in p.PRESETS)); "
                  "print(p.load_preset('tiny').lstm.dim)"],
                 **elsewhere).stdout.split()
    assert where == [str(source / "options" / f"{name}.json")
                     for name in ("tiny", "small",
                                  "elmo_2x4096_512_2048cnn_2xhighway")
                     ] + ["128"]
    # a preset name is an --options value (checked before TensorFlow)
    done = subprocess.run(
        [root / "venv" / "bin" / "bilm-keras", "train", "--options",
         "smal", "--train_prefix", "x", "--vocab_file", "v",
         "--save_dir", "s"], capture_output=True, text=True, timeout=300,
        **elsewhere)
    assert done.returncode == 1
    assert "did you mean small?" in done.stderr

