"""Where the model cache is: BILM_KERAS_CACHE, else XDG_CACHE_HOME, else
~/.cache; and the cache keys of URLs, archives and folders."""

import os

from bilm_keras.pretrained import default_cache_dir
from bilm_keras.pretrained.model_cache import hashed_key


def test_the_cache_directory_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BILM_KERAS_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_cache_dir() == str(tmp_path / "home" / ".cache"
                                      / "bilm_keras")
    # a relative XDG_CACHE_HOME is ignored, as the XDG spec says
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert default_cache_dir() == str(tmp_path / "home" / ".cache"
                                      / "bilm_keras")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == str(tmp_path / "xdg" / "bilm_keras")
    monkeypatch.setenv("BILM_KERAS_CACHE", "~/models")
    assert default_cache_dir() == str(tmp_path / "home" / "models")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BILM_KERAS_CACHE", "rel")
    assert default_cache_dir() == os.path.join(str(tmp_path), "rel")


def test_keys_are_file_names_that_differ_by_identity():
    a = hashed_key("url", "http://h/x/179.zip", "179.zip")
    b = hashed_key("url", "http://other/x/179.zip", "179.zip")
    assert a != b and a.startswith("url-") and a.endswith("-179.zip")
    odd = hashed_key("file", "/p", "we?ird name/../x.zip")
    assert "/" not in odd and "?" not in odd and ".." not in odd
