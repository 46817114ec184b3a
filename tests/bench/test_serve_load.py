"""``bench/serve_load.py --quick`` runs end to end (no speed asserted): the
server as a child on 127.0.0.1, every phase in seconds, one JSON line.
In the nightly tier with the other benchmark scripts' runs; the bounded
load test of the default run is ``tests/serving/test_server.py``'s."""

import pytest
from helpers import run_bench_script


@pytest.mark.nightly
def test_quick_bench_reports_every_phase(quick_bench_workdir):
    report = run_bench_script(
        "serve_load.py", "--quick", "--clients", "4", "--duration", "2",
        "--lone_requests", "2", "--bulk_passes", "1", "--bulk_sentences",
        "8", "--max_concurrent_requests", "4", "--overload_s", "1",
        "--rss_requests", "20", "--rss_warmup", "4", "--sigterm_after_s",
        "2", "--workdir", quick_bench_workdir)
    assert report["load"]["statuses"] == {"200": report["load"]["requests"]}
    assert report["load"]["tokens_per_s"] > 0
    assert report["load"]["server_over_bulk"] > 0
    assert report["lone"]["over_direct"] > 0
    assert report["overload"]["only_200_and_429"]
    assert report["rss"]["statuses"] == {"200": 20}
    assert report["sigterm"]["exit_status"] == 0
    assert report["sigterm"]["every_accepted_answered"]
    assert report["machine"]["cpu"]
