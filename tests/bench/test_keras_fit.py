"""``bench/keras_fit.py --quick`` runs end to end (no speed asserted): the
tiny model through the bulk path and a tagger's fit, the cache and its
storage options, the fine-tuned LM."""

import pytest

from helpers import run_bench_script


@pytest.mark.nightly
def test_quick_bench_reports_one_json_line(quick_bench_workdir):
    report = run_bench_script("keras_fit.py", "--quick", "--sentences", "8",
                              "--workdir", quick_bench_workdir)
    assert report["model"] == "tiny"
    for key in ("embed_tokens_per_s", "fit_mix_tokens_per_s",
                "fit_all_tokens_per_s", "fit_mix_over_embed",
                "fit_mix_sorted_over_embed",
                "fit_all_over_embed", "cache_speedup"):
        assert report[key] > 0, key
    assert len(report["rounds"]["embed"]) == 1
    sizes = report["cache_sizes"]
    assert set(sizes) == {f"{name}_{dtype}" for name in (
        "every_layer", "lstm_layers_1_2", "fixed_mix")
        for dtype in ("float32", "float16")}
    # the tiny model's 3 layers of 32 floats, 2 of them, 1: in bytes
    per_token = {k: v["bytes_per_token"] for k, v in sizes.items()}
    assert per_token["fixed_mix_float16"] < per_token["fixed_mix_float32"] \
        < per_token["lstm_layers_1_2_float32"] \
        < per_token["every_layer_float32"]
