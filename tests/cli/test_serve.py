"""``bilm-keras serve``'s checks: the API key file, read before TensorFlow
(the process itself: ``tests/serving/test_server.py``)."""

import pytest

from bilm_keras import cli


@pytest.mark.parametrize("content,says", [
    (None, "no such file"),
    ("", "expected one key on one line, found nothing"),
    ("two words\n", "expected one key on one line, found spaces"),
])
def test_a_bad_key_file_is_one_line(model_dir, tmp_path, capsys,
                                    monkeypatch, content, says):
    key = tmp_path / "key.txt"
    if content is not None:
        key.write_text(content, encoding="utf-8")
    monkeypatch.setattr(cli, "import_tensorflow", _no_tensorflow)
    code = cli.main(["serve", "--model", str(model_dir),
                     "--api_key_file", str(key)])
    err = capsys.readouterr().err
    assert code == 1
    [line] = err.splitlines()
    assert line.startswith("bilm-keras serve: error: --api_key_file ")
    assert says in line


def _no_tensorflow(*args, **kwargs):
    raise AssertionError("the command got past its checks")


def test_the_default_bind_is_this_machine_only():
    args = cli.parse_args(["serve", "--model", "elmo-original"])
    assert args.host == "127.0.0.1" and args.port == 8080
    assert args.model == ["elmo-original"]
