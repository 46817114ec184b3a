"""Coverage-guided fuzzing of every reader of a file a user downloads.

``fuzz/targets.py`` holds one target per reader, called through the entry
point a user calls; ``fuzz/harness.py`` checks, for every input, what must
hold (only the reader's own errors escape, in one line; bounded memory,
time and output; no code run); ``fuzz/run_target.py`` runs one target under
atheris (libFuzzer); ``fuzz/campaign.py`` runs them all and reports;
``fuzz/replay.py`` replays the kept corpus and the regression inputs, as
``tests/fuzz/test_replay.py`` does in the quick tier. Install with the
``fuzz`` extra: ``pip install -e '.[fuzz]'``.
"""
