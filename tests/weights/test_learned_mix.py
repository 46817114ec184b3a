"""mix.json: written and read back, and every malformed one refused in
one line naming the file and the field."""

import pytest

from bilm_keras.weights.learned_mix import (
    LearnedMix,
    LearnedMixError,
    mix_beside,
    read_mix,
    write_mix,
)


def test_round_trip(tmp_path):
    mix = LearnedMix((0.3, -0.5, 1.1), 0.75)
    write_mix(tmp_path / "mix.json", mix)
    assert read_mix(tmp_path / "mix.json") == mix
    assert mix_beside(tmp_path) == mix
    assert mix_beside(tmp_path / "nowhere") is None


@pytest.mark.parametrize("text, match", [
    ("{", r"mix.json: expected a JSON mix, cannot read it"),
    ('{"gamma": 1.0}', r"mix.json: mix_logits: expected a non-empty list"),
    ('{"mix_logits": [1, "a"], "gamma": 1}', r"found \[1, 'a'\]"),
    ('{"mix_logits": [1.0], "gamma": NaN}',
     r"mix.json: gamma: expected a finite number, found nan"),
    ('{"mix_logits": [1.0], "gamma": true}', r"gamma: .* found True"),
])
def test_bad_mix_files(tmp_path, text, match):
    (tmp_path / "mix.json").write_text(text)
    with pytest.raises(LearnedMixError, match=match) as e:
        read_mix(tmp_path / "mix.json")
    assert "\n" not in str(e.value)
