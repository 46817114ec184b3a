"""Process memory: give freed memory back to the system promptly.

glibc's ``malloc`` serves a block of 128 KiB or more with its own ``mmap``
and unmaps it when freed. That lasts until a block that large is freed.
From then on the threshold rises to that block's size, up to 32 MiB, and
blocks below it come from heaps that rarely shrink. Tracing TensorFlow
graphs and building arrays of embeddings free many such blocks. So a long
embedding run keeps tens of megabytes it no longer uses.
``bench/embed_throughput.py --as_user`` measures it, and
``bench/RESULTS.md`` has the figures. Fixing the threshold at its initial
128 KiB keeps every large block returnable.

Who sets it:

* the bulk embedding path on its first call, through
  :func:`return_freed_memory_for_bulk_embedding`. That is
  :meth:`BidirectionalLanguageModel.embed_sentences
  <bilm_keras.BidirectionalLanguageModel.embed_sentences>`, and so
  ``iter_embeddings`` and ``dump_bilm_embeddings``.
* the ``bilm-keras embed`` command, before it imports TensorFlow.

Nothing is set on import. Nothing is set on a process whose environment
sets ``MALLOC_MMAP_THRESHOLD_``, since glibc has then applied the user's
value at start-up, and it wins. Nor on one that called
:func:`keep_glibc_defaults` first. Setting it is safe at any time.
``mallopt`` is thread-safe, changes no allocation already made and only
decides how later large blocks are served. Its cost, an ``mmap``/``munmap``
pair per large ``malloc``, was not told apart from the noise of the shared
benchmark machine (``bench/RESULTS.md``). Outside glibc nothing happens.
"""

import ctypes
import ctypes.util
import os

#: ``mallopt`` parameter number of ``M_MMAP_THRESHOLD`` (glibc's malloc.h)
_M_MMAP_THRESHOLD = -3

#: glibc's initial (and smallest dynamic) mmap threshold
MMAP_THRESHOLD_BYTES = 128 * 1024

#: the environment variable through which glibc takes a fixed threshold
MMAP_THRESHOLD_ENV = "MALLOC_MMAP_THRESHOLD_"

_bulk_setting = None  # the result of the first bulk call, then reused


def return_freed_memory() -> bool:
    """Fixes glibc's mmap threshold at 128 KiB for this process.

    Returns:
        True when it was set. False where the C library is not glibc, and
        nothing changes there.
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


def keep_glibc_defaults() -> None:
    """Stops the bulk embedding path from setting the threshold in this
    process. Call it before the first embedding, since it undoes
    nothing."""
    global _bulk_setting
    if _bulk_setting is None:
        _bulk_setting = False


def return_freed_memory_for_bulk_embedding() -> bool:
    """:func:`return_freed_memory`, once per process, unless the
    environment sets ``MALLOC_MMAP_THRESHOLD_`` (the user's choice wins) or
    :func:`keep_glibc_defaults` was called.

    Returns:
        True when the threshold is fixed at 128 KiB by this module.
    """
    global _bulk_setting
    if _bulk_setting is None:
        _bulk_setting = (MMAP_THRESHOLD_ENV not in os.environ
                         and return_freed_memory())
    return _bulk_setting
