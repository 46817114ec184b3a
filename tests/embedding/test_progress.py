"""ProgressBar: total, rate and ETA, redrawn in place on a terminal and
throttled in a log file."""

import io

from bilm_keras.embedding.progress import ProgressBar


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_line_has_total_rate_and_eta():
    clock = Clock()
    bar = ProgressBar(10, total_tokens=1000, label="in.txt",
                      file=io.StringIO(), interactive=False, clock=clock)
    clock.now += 4.0
    bar.update(4, tokens=200)  # 50 tokens/s, 800 tokens left
    line = bar.line(clock.now)
    assert line.startswith("in.txt 4/10 sentences [=========>")
    assert " 40% 50 tokens/s 0:04 ETA 0:16" in line
    clock.now += 4.0
    bar.update(6, tokens=800)
    assert bar.line(clock.now).endswith("100% 125 tokens/s 0:08")  # no ETA


def test_eta_without_token_total_counts_sentences():
    clock = Clock()
    bar = ProgressBar(3, file=io.StringIO(), interactive=False, clock=clock)
    clock.now += 10
    bar.update(1)
    assert bar.line(clock.now).endswith(
        "1/3 sentences [========>...............]  33% 0.1 sentences/s "
        "0:10 ETA 0:20")


def test_terminal_redraws_one_line_at_every_update():
    out, clock = io.StringIO(), Clock()
    bar = ProgressBar(2, total_tokens=4, file=out, interactive=True,
                      clock=clock)
    bar.update(1, tokens=2)
    bar.update(1, tokens=2)
    bar.close()
    bar.close()  # once
    text = out.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n")
    assert text.count("\n") == 1


def test_log_file_gets_a_line_every_log_every_seconds():
    out, clock = io.StringIO(), Clock()
    bar = ProgressBar(100, file=out, interactive=False, log_every=10,
                      clock=clock)
    for _ in range(100):  # one batch a second
        clock.now += 1
        bar.update(1)
    bar.close()
    lines = out.getvalue().splitlines()
    # the first batch, then every 10 s, then the end
    assert len(lines) == 11
    assert lines[-1].startswith("100/100 sentences")
