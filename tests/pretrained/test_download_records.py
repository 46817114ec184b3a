"""Each downloaded URL's sha256 and size are recorded in the cache at its
first download, and every later download of it must give the same bytes
(served from the local server, never the real network); a redirect from
https to plain http is refused."""
# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments)
import hashlib
import json
import os
import urllib.request

import pytest
from model_server import (  # noqa: F401 (fixtures)
    BILM_TF_ZIP,
    ELMO_SMALL_OPTIONS,
    ELMO_SMALL_WEIGHTS,
    cache_contents,
    cache_dir,
    mirrored,
    model_server,
    served_files,
)

from bilm_keras.pretrained import PretrainedModelError, resolve_model
from bilm_keras.pretrained.download import _NoDowngrade
from bilm_keras.pretrained.model_cache import (
    check_download,
    download_record_path,
)


def _records(cache_dir):
    folder = cache_dir / "downloads"
    return {r["url"]: r for r in (
        json.loads((folder / name).read_text()) for name in sorted(
            os.listdir(folder)))} if folder.is_dir() else {}


def test_the_first_download_is_recorded(mirrored, cache_dir, served_files):
    resolve_model("elmo-small")
    records = _records(cache_dir)
    assert sorted(records) == [mirrored.url + ELMO_SMALL_OPTIONS,
                               mirrored.url + ELMO_SMALL_WEIGHTS]
    for url, record in records.items():
        body = served_files[url[len(mirrored.url):]]
        assert record["sha256"] == hashlib.sha256(body).hexdigest()
        assert record["bytes"] == len(body)
        assert record["first_downloaded"].endswith("Z")


def test_the_same_bytes_again_pass(model_server, cache_dir):
    url = model_server.url + BILM_TF_ZIP
    first = resolve_model(url)
    recorded = _records(cache_dir)
    # the model removed from the cache: its archive is fetched again
    os.remove(os.path.join(first.directory, "bilm_keras_model.json"))
    os.rename(first.directory, str(cache_dir / "removed"))
    again = resolve_model(url)
    assert model_server.requests[BILM_TF_ZIP] == 2
    assert again.directory == first.directory
    assert _records(cache_dir) == recorded


def test_other_bytes_later_are_refused(model_server, cache_dir):
    url = model_server.url + BILM_TF_ZIP
    first = resolve_model(url)
    os.remove(os.path.join(first.directory, "bilm_keras_model.json"))
    os.rename(first.directory, str(cache_dir / "removed"))
    record = download_record_path(str(cache_dir), url)
    expected = json.loads(open(record).read())["sha256"]
    model_server.routes[BILM_TF_ZIP] = (
        model_server.routes[BILM_TF_ZIP] + b"\0")
    found = hashlib.sha256(model_server.routes[BILM_TF_ZIP]).hexdigest()
    with pytest.raises(
            PretrainedModelError,
            match=rf"^{url}: expected the bytes of its first download "
                  rf"\(sha256 {expected}, \d+ bytes, 20\d\d-[\d-]+T[\d:]+Z\)"
                  rf", found sha256 {found} \(\d+ bytes\); nothing was "
                  rf"cached\. .* remove {record} and fetch again$"):
        resolve_model(url)
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}
    os.remove(record)  # the change accepted: recorded anew
    resolve_model(url)
    assert json.loads(open(record).read())["sha256"] == found


def test_a_damaged_record_is_named(tmp_path):
    url = "https://example.org/elmo/model.zip"
    check_download(str(tmp_path), url, "a" * 64, 10)
    record = download_record_path(str(tmp_path), url)
    with open(record, "w") as f:
        f.write("[1, 2")
    with pytest.raises(PretrainedModelError,
                       match=rf"^{record}: expected a download record .* "
                             rf"remove it to record {url} anew$"):
        check_download(str(tmp_path), url, "a" * 64, 10)
    assert os.listdir(tmp_path / "downloads") == [os.path.basename(record)]


def test_a_redirect_from_https_to_http_is_refused():
    handler = _NoDowngrade()
    request = urllib.request.Request("https://example.org/model.zip")
    with pytest.raises(PretrainedModelError,
                       match=r"^https://example\.org/model\.zip: download "
                             r"refused: the server redirects to plain http "
                             r"\(http://example\.org/model\.zip\)$"):
        handler.redirect_request(request, None, 302, "Found", {},
                                 "http://example.org/model.zip")
    # https to https, and http to https, are followed
    for old, new in (("https://a.org/x", "https://b.org/x"),
                     ("http://a.org/x", "https://a.org/x")):
        followed = handler.redirect_request(
            urllib.request.Request(old), None, 302, "Found", {}, new)
        assert followed.full_url == new
