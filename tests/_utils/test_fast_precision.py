"""``bilm_keras/_utils/fast_precision.py``: which machines run a precision
fast, and the one warning naming what is missing on the others."""

import logging

import pytest

from bilm_keras._utils import fast_precision
from bilm_keras._utils.fast_precision import (
    cpu_flags,
    slow_precision_reason,
    warn_if_slow,
)

AMX_XEON = {"avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "amx_int8"}
EPYC = {"avx512f", "avx512_bf16"}  # bfloat16 measured 0.54-0.66x float32
OLD_CPU = {"avx2", "fma"}


def test_cpu_flags_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Xeon\n"
                       "flags\t\t: fpu avx512f amx_bf16 avx512_bf16\n\n")
    assert cpu_flags(str(cpuinfo)) == {"fpu", "avx512f", "amx_bf16",
                                       "avx512_bf16"}
    assert cpu_flags(str(tmp_path / "absent")) == set()


def test_float32_is_always_fast():
    assert slow_precision_reason("float32", flags=set(), gpus=[]) is None


@pytest.mark.parametrize("flags, missing", [
    (AMX_XEON, None),
    (EPYC, "no amx_bf16 flag in /proc/cpuinfo (it has avx512_bf16"),
    (OLD_CPU, "no amx_bf16 flag in /proc/cpuinfo (nor avx512_bf16)"),
])
def test_bfloat16_on_cpus(flags, missing):
    reason = slow_precision_reason("bfloat16", flags=flags, gpus=[])
    if missing is None:
        assert reason is None
    else:
        assert missing in reason


def test_float16_needs_a_gpu():
    assert "no GPU is visible" in slow_precision_reason(
        "float16", flags=AMX_XEON, gpus=[])


@pytest.mark.parametrize("dtype, capability, fast", [
    ("bfloat16", (8, 0), True), ("bfloat16", (9, 0), True),
    ("bfloat16", (7, 5), False), ("float16", (7, 0), True),
    ("float16", (6, 1), False), ("bfloat16", None, False),
])
def test_gpus_by_compute_capability(dtype, capability, fast):
    reason = slow_precision_reason(dtype, flags=OLD_CPU,
                                   gpus=[("Tesla T4", capability)])
    if fast:
        assert reason is None
    else:
        shown = "unknown" if capability is None else "%d.%d" % capability
        need = "8.0" if dtype == "bfloat16" else "7.0"
        assert f"capability {need} and up" in reason
        assert f"Tesla T4 (compute capability {shown})" in reason


def test_warns_once_per_dtype(monkeypatch, caplog):
    monkeypatch.setattr(fast_precision, "_warned", set())
    monkeypatch.setattr(fast_precision, "cpu_flags", lambda: OLD_CPU)
    monkeypatch.setattr(fast_precision, "gpu_capabilities", lambda: [])
    with caplog.at_level(logging.WARNING, logger=fast_precision.__name__):
        for _ in range(3):
            assert warn_if_slow("bfloat16") is not None
        assert warn_if_slow("float32") is None
    assert [r.getMessage().count("amx_bf16") for r in caplog.records] == [1]
