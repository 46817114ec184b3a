"""``bilm_keras.embedding.memory``: glibc's mmap threshold is fixed where
glibc is the C library, and nothing happens elsewhere."""

import platform
import subprocess
import sys

import pytest

from bilm_keras.embedding import memory

# the children are fresh interpreters, not helpers.python_argv's: what
# glibc's allocator does in a process that has not run before is the point


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                    reason="mallopt is glibc's")
def test_threshold_is_set_on_glibc():
    assert memory.return_freed_memory() is True


def test_freed_large_blocks_leave_the_process():
    # a freed 1 MB block raises glibc's dynamic threshold; 256 KB blocks
    # then come from the heap and, with small blocks kept between them,
    # stay resident when freed (0 MB returned without the fix, measured).
    # 256 KB, not 128 KB: a block right at the fixed threshold may still
    # come from the heap's top, so how much of it returns depends on what
    # the process allocated before (1-4 MB of 16 without TensorFlow).
    code = """
import numpy as np
from bilm_keras.embedding.memory import return_freed_memory
fixed = return_freed_memory()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
a = np.ones(1 << 20, np.uint8); del a
before = rss()
blocks, kept = [], []
for _ in range(128):
    blocks.append(np.ones(1 << 18, np.uint8))
    kept.append(np.ones(1000, np.float64))
during = rss()
del blocks
print(fixed, during - before, during - rss())
"""
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True, timeout=60).stdout.split()
    fixed, grown, returned = out[0] == "True", int(out[1]), int(out[2])
    assert fixed
    assert grown >= 24 << 20
    assert returned >= 16 << 20


@pytest.mark.parametrize("env_value", [None, "1048576"])
def test_bulk_embedding_sets_it_once_unless_the_environment_does(
        env_value):
    # the user's MALLOC_MMAP_THRESHOLD_ wins: glibc applied it at start-up
    import os

    env = dict(os.environ)
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    if env_value is not None:
        env["MALLOC_MMAP_THRESHOLD_"] = env_value
    code = """
from bilm_keras.embedding import memory
calls = []
memory.return_freed_memory = lambda: calls.append(1) or True
print(memory.return_freed_memory_for_bulk_embedding(),
      memory.return_freed_memory_for_bulk_embedding(), len(calls))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True, timeout=60,
                         env=env).stdout.split()
    if env_value is None:
        assert out == ["True", "True", "1"]
    else:
        assert out == ["False", "False", "0"]


def test_embed_sentences_sets_it(fixture_bilm):
    fixture_bilm.embed_sentences([["a"]])
    expected = ("MALLOC_MMAP_THRESHOLD_" not in __import__("os").environ
                and platform.libc_ver()[0] == "glibc")
    assert memory._bulk_setting is expected


def test_keep_glibc_defaults_stops_the_bulk_path():
    code = """
from bilm_keras.embedding import memory
memory.return_freed_memory = lambda: 1 / 0  # must not be called
memory.keep_glibc_defaults()
print(memory.return_freed_memory_for_bulk_embedding())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True, timeout=60).stdout.split()
    assert out == ["False"]
