"""Process memory: give freed memory back to the system promptly.

glibc's ``malloc`` serves a block of 128 KiB or more with its own ``mmap``
and unmaps it when freed, until a block that large is freed: from then on
the threshold rises to that block's size (up to 32 MiB), and blocks below
it come from heaps that rarely shrink. Tracing TensorFlow graphs and
building arrays of embeddings free many such blocks, so a long embedding
run keeps tens of megabytes it no longer uses (20-40 MB for the published
model: peak RSS 1,175 -> 1,154 MB in ``bench/embed_throughput.py``).
Fixing the threshold at its initial 128 KiB keeps every large block
returnable.

``bin/dump_bilm_embeddings.py`` calls :func:`return_freed_memory`; a
program of your own can, or can set ``MALLOC_MMAP_THRESHOLD_=131072`` in the
environment. It changes the whole process's ``malloc``, which is why the
library does not do it on import.
"""

import ctypes
import ctypes.util

#: ``mallopt`` parameter number of ``M_MMAP_THRESHOLD`` (glibc's malloc.h)
_M_MMAP_THRESHOLD = -3

#: glibc's initial (and smallest dynamic) mmap threshold
MMAP_THRESHOLD_BYTES = 128 * 1024


def return_freed_memory() -> bool:
    """Fixes glibc's mmap threshold at 128 KiB for this process.

    Returns:
        True when it was set; False where the C library is not glibc
        (nothing changes there).
    """
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
