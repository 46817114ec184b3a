import pytest

from bilm_keras._utils.settings import SettingError
from bilm_keras.serving.limits import ServeLimits


def test_defaults_and_as_dict():
    limits = ServeLimits(max_sentences=3)
    assert limits.as_dict()["max_sentences"] == 3
    assert limits.as_dict()["max_batch_tokens"] == 8192


@pytest.mark.parametrize("field,value,allowed", [
    ("max_batch_tokens", 0, "an integer >= 1"),
    ("max_wait_ms", -1, "an integer >= 0"),
    ("max_concurrent_requests", 1.5, "an integer >= 1"),
    ("max_request_bytes", None, "an integer >= 1"),
])
def test_a_bad_limit_names_its_field(field, value, allowed):
    with pytest.raises(SettingError, match=f"^{field}: expected {allowed}"):
        ServeLimits(**{field: value})
