"""Hostile archives are refused in one line naming the archive and the
member, and nothing is written outside the cache: an absolute path, '..',
a symbolic or hard link, a device or FIFO, in tars (bz2, gz) and zips, as
a local archive and by URL. The model in an archive, extracted for a
command, is of the family asked for, and its errors name the archive."""

# ruff: noqa: F811  (the fixtures imported from model_server are test
# arguments: pytest's way to share them without a second conftest.py)

import io
import os
import stat
import tarfile
import zipfile

import pytest
from model_server import (  # noqa: F401 (fixtures)
    ModelServer,
    cache_contents,
    cache_dir,
    tar_bytes,
    zip_bytes,
)

from bilm_keras.pretrained import PretrainedModelError, resolve_model
from bilm_keras.pretrained.archives import extract_archive, extracted_model
from bilm_keras.weights.model_detection import ELMOFORMANYLANGS, TFHUB_TF1

PAYLOAD = b"written where it must not be\n"


def _tar(members, mode="w:bz2") -> bytes:
    """A tar of ``(TarInfo, bytes or None)`` pairs."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tf:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
            else:
                tf.addfile(info)
    return buffer.getvalue()


def _info(name, kind=tarfile.REGTYPE, linkname=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = 0o644
    return info


def _zip_with_mode(name: str, data: bytes, mode: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        info = zipfile.ZipInfo(name)
        info.create_system = 3
        info.external_attr = mode << 16
        zf.writestr(info, data)
    return buffer.getvalue()


def _hostile(outside: str):
    """(archive file name, bytes, refused member, why) for every case;
    ``outside`` is an absolute path that must never be created."""
    ok = ("m/options.json", b"{}")
    return [
        ("abs.tar.bz2", _tar([(_info(outside), PAYLOAD)]), outside,
         "an absolute path"),
        ("dotdot.tar.gz",
         _tar([(_info("m/../../escaped.txt"), PAYLOAD)], "w:gz"),
         "m/../../escaped.txt", "a path with '..'"),
        ("symlink.tar.bz2",
         _tar([(_info("m/link", tarfile.SYMTYPE, outside), None),
               (_info("m/link/x.txt"), PAYLOAD)]),
         "m/link", "a symbolic link"),
        ("hardlink.tar.bz2",
         _tar([(_info("m/hard", tarfile.LNKTYPE, outside), None)]),
         "m/hard", "a hard link"),
        ("device.tar.bz2",
         _tar([(_info("m/null", tarfile.CHRTYPE), None)]),
         "m/null", "a device or FIFO"),
        ("fifo.tar.bz2",
         _tar([(_info("m/pipe", tarfile.FIFOTYPE), None)]),
         "m/pipe", "a device or FIFO"),
        ("abs.zip", zip_bytes({ok[0]: ok[1], outside: PAYLOAD}), outside,
         "an absolute path"),
        ("dotdot.zip", zip_bytes({ok[0]: ok[1], "../escaped.txt": PAYLOAD}),
         "../escaped.txt", "a path with '..'"),
        ("symlink.zip",
         _zip_with_mode("m/link", outside.encode(), stat.S_IFLNK | 0o777),
         "m/link", "a symbolic link"),
        ("fifo.zip", _zip_with_mode("m/pipe", b"", stat.S_IFIFO | 0o644),
         "m/pipe", "a device, FIFO or other special file"),
    ]


def _everything_under(folder):
    return sorted(os.path.relpath(os.path.join(d, n), folder)
                  for d, dirs, files in os.walk(folder)
                  for n in dirs + files)


def test_hostile_local_archives_are_refused(tmp_path, cache_dir):
    outside = str(tmp_path / "outside" / "evil.txt")
    archives = tmp_path / "archives"
    archives.mkdir()
    for file_name, data, member, why in _hostile(outside):
        archive = archives / file_name
        archive.write_bytes(data)
        before = _everything_under(tmp_path)
        with pytest.raises(PretrainedModelError) as error:
            resolve_model(str(archive))
        message = str(error.value)
        assert message.startswith(
            f"{archive}: member {member!r}: refused ({why})"), message
        assert "\n" not in message
        assert not os.path.lexists(outside), file_name
        assert not (tmp_path / "escaped.txt").exists()
        assert cache_contents(cache_dir) == {"models": [], "tmp": []}
        after = [p for p in _everything_under(tmp_path)
                 if not p.startswith("cache")]
        assert after == [p for p in before if not p.startswith("cache")]


def test_a_hostile_archive_by_url_names_the_url(tmp_path, cache_dir):
    outside = str(tmp_path / "outside" / "evil.txt")
    data = _hostile(outside)[2][1]  # the symlink tar
    server = ModelServer({"/evil.tar.bz2": data})
    try:
        url = server.url + "/evil.tar.bz2"
        with pytest.raises(PretrainedModelError,
                           match=f"^{url}: member 'm/link': refused "
                                 r"\(a symbolic link\)"):
            resolve_model(url)
    finally:
        server.stop()
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}
    assert not os.path.lexists(outside)


def test_a_zip_refuses_before_writing_anything(tmp_path):
    archive = tmp_path / "a.zip"
    archive.write_bytes(zip_bytes({"m/options.json": b"{}",
                                   "m/../../x.txt": PAYLOAD}))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(PretrainedModelError, match="'..'"):
        extract_archive(str(archive), str(out))
    assert _everything_under(out) == []


def test_a_safe_archive_is_extracted(tmp_path):
    archive = tmp_path / "a.tar.bz2"
    archive.write_bytes(tar_bytes({"m/a.txt": b"a", "m/b/c.txt": b"c"}))
    out = tmp_path / "out"
    out.mkdir()
    extract_archive(str(archive), str(out), label="LABEL")
    assert (out / "m" / "a.txt").read_bytes() == b"a"
    assert (out / "m" / "b" / "c.txt").read_bytes() == b"c"


def _manylangs_archive(tmp_path):
    archive = tmp_path / "zh.tar.bz2"
    archive.write_bytes(tar_bytes({"zh/config.json": b"{}",
                                   "zh/encoder.pkl": b"",
                                   "zh/token_embedder.pkl": b""}))
    return archive


def test_the_model_in_an_archive_and_errors_that_name_it(tmp_path,
                                                         monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    archive = _manylangs_archive(tmp_path)
    with pytest.raises(ValueError, match=(
            r"^\S+zh\.tar\.bz2: zh/config\.json: expected a field$")):
        with extracted_model(archive, family=ELMOFORMANYLANGS) as folder:
            assert sorted(os.listdir(folder)) == [
                "config.json", "encoder.pkl", "token_embedder.pkl"]
            raise ValueError(
                f"{os.path.join(folder, 'config.json')}: expected a field")
    assert os.listdir(tmp_path / "tmp") == []  # removed


def test_a_model_of_another_family_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with pytest.raises(PretrainedModelError, match=(
            r"zh\.tar\.bz2: expected a tfhub-tf1 model, found a "
            r"elmoformanylangs model")):
        with extracted_model(_manylangs_archive(tmp_path),
                             family=TFHUB_TF1):
            pytest.fail("entered")
    assert os.listdir(tmp_path / "tmp") == []


@pytest.mark.parametrize("data, match", [
    (b"just some text\n", ("expected an archive .* found a file that is "
                          "neither a zip nor a tar")),
    (None, "cannot read the archive"),  # a truncated .tar.bz2
])
def test_unreadable_archives(tmp_path, cache_dir, data, match):
    if data is None:
        whole = tar_bytes({"m/a.txt": os.urandom(200_000)})
        data = whole[: len(whole) // 2]
    archive = tmp_path / "x.tar.bz2"
    archive.write_bytes(data)
    with pytest.raises(PretrainedModelError, match=f"x.tar.bz2: {match}"):
        resolve_model(str(archive))
    assert cache_contents(cache_dir) == {"models": [], "tmp": []}
