import pytest

from helpers import require_installed, run_bench_script


@pytest.mark.nightly
def test_embed_beam_quick_runs():
    """One round of plain ``embed`` against ``embed --runner
    DirectRunner`` with two workers, on the tiny model: both commands
    finish (a failed one fails the script), and the report has both arms'
    rates and a peak for each of the two workers."""
    require_installed("apache_beam", "beam")
    # the arms are fresh processes, as a user runs the commands: their
    # start-up is part of what the script measures
    result = run_bench_script("embed_beam.py", "--quick", "--rounds", "1",
                              "--n_sentences", "16")
    assert (result["model"], result["n_sentences"]) == ("tiny", 16)
    assert result["plain_tokens_per_s"] > 0
    assert result["beam_2_workers_tokens_per_s"] > 0
    assert len(result["beam_worker_peak_rss_mb"]) == 2
