"""The live progress line: throttled lines on a pipe, notes in between."""

from __future__ import annotations

import io
from dataclasses import replace

from simulation.live import LiveLine, Progress

START = Progress(elapsed=0.0, jobs_total=10, jobs_queued=3, jobs_running=2, jobs_done=5,
                 pending=1, running=2, finished=1, deleting=0, replicas=4, patch_id=12,
                 marker=11)  # fmt: skip


def test_on_a_pipe_a_line_is_printed_at_most_every_interval_and_notes_always() -> None:
    out = io.StringIO()
    live = LiveLine(stream=out, every=5.0)

    for second in (0.0, 1.0, 4.9, 5.0, 6.0):
        live.update(replace(START, elapsed=second))
    live.note("fault: api-409")
    live.close()

    lines = out.getvalue().splitlines()
    assert [line[:8] for line in lines[:2]] == ["[  0.0s]", "[  5.0s]"]
    assert lines[2] == "fault: api-409"
    assert "jobs 5/10 done, 2 running, 3 waiting" in lines[0]
    assert "replicas 4, patchID 12, marker 11" in lines[0]


def test_a_disabled_line_prints_nothing() -> None:
    out = io.StringIO()
    live = LiveLine(stream=out, enabled=False)

    live.update(START)
    live.note("fault")
    live.close()

    assert out.getvalue() == ""
