import pytest

from bilm_keras.serving.model_names import check_model_name, parse_model_flag


@pytest.mark.parametrize("text,expected", [
    ("elmo-original", (None, "elmo-original")),
    ("en=elmo-original", ("en", "elmo-original")),
    ("zh=/models/zh", ("zh", "/models/zh")),
    ("https://host/m.tar.gz?a=b", (None, "https://host/m.tar.gz?a=b")),
    ("/data/a=b", (None, "/data/a=b")),  # no name: the path itself
])
def test_name_and_spec(text, expected):
    assert parse_model_flag(text) == expected


def test_an_empty_name_is_refused():
    with pytest.raises(ValueError, match="expected NAME=SPEC, found '=x'"):
        parse_model_flag("=x")


def test_a_name_is_letters_digits_and_dots():
    assert check_model_name("elmo_2.x-1") == "elmo_2.x-1"
    with pytest.raises(ValueError, match="found '../x'"):
        check_model_name("../x")
