"""Whether this machine runs a reduced precision fast, and the one warning
when it does not.

bfloat16 products are fast on CPUs with AMX (``amx_bf16``, Intel Sapphire
Rapids and later), at 2.8-4.0x float32 at the biLM's shapes. They are fast
on GPUs of compute capability 8.0 and up (Ampere) too. float16 products are
fast on GPUs of 7.0 and up (Volta). Elsewhere they run, slower than
float32. On an AMD EPYC with ``avx512_bf16`` but no AMX, TensorFlow's
bfloat16 products ran at 0.54-0.66x float32 (``bench/RESULTS.md``). So
AVX-512 BF16 alone does not count as fast.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

#: the CPU flag (``/proc/cpuinfo``) under which TensorFlow's bfloat16
#: products run faster than float32
BFLOAT16_CPU_FLAG = "amx_bf16"

#: the lowest GPU compute capability with fast products of each dtype
MIN_GPU_CAPABILITY = {"bfloat16": (8, 0), "float16": (7, 0)}

#: the precision names every path takes (``bilm_keras.layers.precision``
#: says what each computes) -> the Keras dtype policy layers are built
#: with; the default first. Here, without TensorFlow, so that the commands'
#: flags can list them before TensorFlow is imported.
#: the precision every path takes unless told: exact
DEFAULT_PRECISION = "float32"
KERAS_POLICIES = {
    DEFAULT_PRECISION: "float32",
    "bfloat16": "mixed_bfloat16",
    "float16": "mixed_float16",
    "mixed_bfloat16": "mixed_bfloat16",
    "mixed_float16": "mixed_float16",
}
PRECISIONS = tuple(KERAS_POLICIES)

_warned: set[str] = set()


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str]:
    """The CPU's feature flags (``flags`` of ``/proc/cpuinfo``). Empty
    where there is no such file, off Linux."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def gpu_capabilities() -> list[tuple[str, tuple[int, int] | None]]:
    """``(name, compute capability)`` of each visible GPU (capability None
    where TensorFlow does not say)."""
    import tensorflow as tf

    gpus = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        gpus.append((details.get("device_name", gpu.name),
                     details.get("compute_capability")))
    return gpus


def slow_precision_reason(compute_dtype: str, *, flags=None,
                          gpus=None) -> str | None:
    """Why products in ``compute_dtype`` will not be fast here, or None
    when they will (float32 always is).

    Args:
        compute_dtype: ``"float32"``, ``"bfloat16"`` or ``"float16"``.
        flags: the CPU flags (default: :func:`cpu_flags`).
        gpus: ``(name, capability)`` per GPU (default:
            :func:`gpu_capabilities`).

    Returns:
        One line naming what is missing: the CPU flag, or each GPU's
        compute capability against the one needed.
    """
    if compute_dtype == "float32":
        return None
    gpus = gpu_capabilities() if gpus is None else gpus
    need = MIN_GPU_CAPABILITY[compute_dtype]
    if gpus:
        slow = [f"{name} (compute capability "
                f"{'unknown' if cc is None else '%d.%d' % tuple(cc)})"
                for name, cc in gpus if cc is None or tuple(cc) < need]
        if not slow:
            return None
        return (f"{compute_dtype} products are fast on GPUs of compute "
                f"capability {need[0]}.{need[1]} and up; found "
                f"{', '.join(slow)}")
    if compute_dtype == "float16":
        return ("float16 products are fast on GPUs only (compute "
                "capability 7.0 and up), and no GPU is visible: on a CPU "
                "float16 runs slower than float32 (use bfloat16 on AMX "
                "CPUs)")
    flags = cpu_flags() if flags is None else flags
    if BFLOAT16_CPU_FLAG in flags:
        return None
    has = ("it has avx512_bf16, which alone measured 0.54-0.66x float32"
           if "avx512_bf16" in flags else "nor avx512_bf16")
    return (f"bfloat16 products are fast on CPUs with AMX; this CPU has "
            f"no amx_bf16 flag in /proc/cpuinfo ({has}), so bfloat16 "
            f"will likely run slower than float32 here")


def warn_if_slow(compute_dtype: str) -> str | None:
    """Logs :func:`slow_precision_reason` as a warning, once per dtype and
    process. Returns the reason, or None."""
    reason = slow_precision_reason(compute_dtype)
    if reason is not None and compute_dtype not in _warned:
        _warned.add(compute_dtype)
        logger.warning("%s", reason)
    return reason
