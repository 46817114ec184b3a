"""``bilm_keras/_utils/cpu_settings.py``: each CPU class's TensorFlow
settings, set before TensorFlow's import, the user's own kept, and one
warning when TensorFlow came first with the slower one."""

import logging
import subprocess

import pytest
from helpers import python_argv, user_env

from bilm_keras._utils import cpu_settings
from bilm_keras._utils.cpu_settings import (
    ONEDNN_VARIABLE,
    CPUSettings,
    apply_cpu_settings,
    classify,
)

# flags as /proc/cpuinfo shows them on each class (trimmed)
AMX_XEON = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni",
            "avx512_bf16", "amx_bf16", "amx_tile", "amx_int8"}
AVX512_EPYC = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni",
               "avx512_bf16"}  # family 26
AVX2_EPYC = {"sse4_2", "avx", "avx2", "fma"}  # family 25
SKYLAKE_X = {"sse4_2", "avx", "avx2", "fma", "avx512f"}  # no VNNI, no BF16
ALDER_LAKE = {"sse4_2", "avx", "avx2", "fma", "avx_vnni"}
OLD_X86 = {"sse4_2", "avx"}
ARM = {"fp", "asimd", "sve"}


@pytest.mark.parametrize("flags, cpu_class, environment", [
    (AMX_XEON, "amx", {}),  # TensorFlow's own default is on
    (AVX512_EPYC, "avx512", {}),
    (SKYLAKE_X, "avx512", {ONEDNN_VARIABLE: "1"}),
    (AVX2_EPYC, "avx2", {ONEDNN_VARIABLE: "1"}),
    (ALDER_LAKE, "avx2", {}),
    (OLD_X86, "other", {}),
    (ARM, "other", {}),
])
def test_each_class_gets_its_settings(flags, cpu_class, environment):
    settings = CPUSettings.for_flags(flags)
    assert classify(flags) == settings.cpu_class == cpu_class
    assert settings.environment() == environment
    assert settings.onednn is (None if cpu_class == "other" else True)
    assert settings.describe().startswith(f"CPU class {cpu_class}: ")


def _not_imported():
    return None


def test_set_before_the_import_when_unset():
    environ = {}
    settings = apply_cpu_settings(AVX2_EPYC, environ, _not_imported)
    assert environ == {ONEDNN_VARIABLE: "1"}
    assert settings.cpu_class == "avx2"
    for flags in (AVX512_EPYC, AMX_XEON, ARM):  # TensorFlow's own stays
        environ = {}
        apply_cpu_settings(flags, environ, _not_imported)
        assert environ == {}


@pytest.mark.parametrize("value", ["0", "1", "false"])
def test_the_users_setting_wins(value, monkeypatch, caplog):
    monkeypatch.setattr(cpu_settings, "_warned", False)
    environ = {ONEDNN_VARIABLE: value}
    with caplog.at_level(logging.DEBUG, logger=cpu_settings.__name__):
        apply_cpu_settings(AVX2_EPYC, environ, lambda: value == "1")
    assert environ == {ONEDNN_VARIABLE: value}
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert f"{ONEDNN_VARIABLE}={value} kept" in caplog.records[0].message


def test_one_warning_when_tensorflow_came_first(monkeypatch, caplog):
    monkeypatch.setattr(cpu_settings, "_warned", False)
    with caplog.at_level(logging.WARNING, logger=cpu_settings.__name__):
        for _ in range(3):
            environ = {}
            apply_cpu_settings(AVX2_EPYC, environ, lambda: False)
            assert environ == {}  # too late to change: nothing set
        apply_cpu_settings(AVX2_EPYC, {}, lambda: True)  # the right one
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert (f"class avx2) it runs faster on: set {ONEDNN_VARIABLE}=1 "
            "before importing TensorFlow") in caplog.records[0].message


def test_no_warning_where_tensorflow_runs_the_choice(monkeypatch, caplog):
    monkeypatch.setattr(cpu_settings, "_warned", False)
    with caplog.at_level(logging.WARNING, logger=cpu_settings.__name__):
        apply_cpu_settings(AMX_XEON, {}, lambda: True)
        apply_cpu_settings(ARM, {}, lambda: False)  # TensorFlow's own
    assert caplog.records == []


def _expected_onednn() -> bool:
    """oneDNN as this machine's class wants it."""
    settings = CPUSettings.for_flags(cpu_settings.cpu_flags())
    return settings.tensorflow_onednn if settings.onednn is None \
        else settings.onednn


@pytest.mark.slow  # a fresh interpreter imports TensorFlow
def test_the_command_sets_it_before_importing_tensorflow():
    # a fresh interpreter (the variable unset, TensorFlow not imported):
    # the command's own import of TensorFlow, then what TensorFlow runs
    env = user_env()
    env.pop(ONEDNN_VARIABLE, None)
    code = ("import sys\n"
            "from bilm_keras.cli._common import import_tensorflow\n"
            "assert 'tensorflow' not in sys.modules\n"
            "import_tensorflow(verbose=True)\n")
    done = subprocess.run(python_argv(env) + ["-c", code], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    state = "on" if _expected_onednn() else "off"
    assert f"TensorFlow runs oneDNN {state}" in done.stderr


@pytest.mark.slow  # a fresh interpreter imports TensorFlow
def test_a_warning_when_tensorflow_was_imported_first():
    env = user_env()
    env.pop(ONEDNN_VARIABLE, None)
    code = (f"import os\n"
            f"os.environ[{ONEDNN_VARIABLE!r}] = '0'\n"
            f"import tensorflow\n"
            f"del os.environ[{ONEDNN_VARIABLE!r}]\n"
            f"import bilm_keras\n")
    done = subprocess.run(python_argv(env) + ["-c", code], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    warned = "TensorFlow was imported before bilm_keras, with oneDNN off"
    assert (warned in done.stderr) is _expected_onednn()
