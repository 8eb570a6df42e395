"""The SVG timeline: a valid document that draws what the trace holds."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from simulation.plot import render_svg
from simulation.trace import JobTrace, Mark, RunnerTrace, Sample, Trace

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 (our own output, not untrusted input)


def _trace(runners: tuple[RunnerTrace, ...]) -> Trace:
    samples = tuple(
        Sample(
            at=float(t),
            assigned_jobs=t % 3,
            replicas=t % 4,
            patch_id=t,
            marker=t // 2,
            pending=1,
            running=t % 2,
            finished=0,
            deleting=t % 3,
        )
        for t in range(10)
    )
    return Trace(
        label="a <run> & co",
        seed=5,
        min_runners=0,
        max_runners=5,
        elapsed=10.0,
        jobs=(JobTrace(name="j", queued_at=0, started_at=1, completed_at=2, runner="busy"),),
        runners=runners,
        samples=samples,
        marks=(Mark(at=4.0, label="listener restart"),),
    )


def test_the_timeline_is_well_formed_svg_with_the_label_escaped() -> None:
    root = _parse(render_svg(_trace(())))

    assert root.tag == f"{SVG}svg"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "a <run> & co: seed 5, min 0, max 5" in texts
    assert "listener restart" in texts
    # replicas, demand, patch ID, marker; one area per phase
    assert len(list(root.iter(f"{SVG}polyline"))) == 4
    assert len(list(root.iter(f"{SVG}polygon"))) == 4


def test_every_wasted_runner_gets_one_cross_and_no_other_runner_does() -> None:
    runners = (
        RunnerTrace(name="busy", created_at=0, registered_at=0.5, deleted_at=3.0),
        RunnerTrace(name="wasted-1", created_at=0, registered_at=0.5, deleted_at=3.0),
        RunnerTrace(name="wasted-2", created_at=0, registered_at=0.5, deleted_at=6.0),
        RunnerTrace(name="unregistered", created_at=0, deleted_at=6.0),
    )

    root = _parse(render_svg(_trace(runners)))

    titles = sorted(t.text or "" for t in root.iter(f"{SVG}title"))
    assert titles == ["wasted: wasted-1", "wasted: wasted-2"]


def test_an_empty_trace_still_renders() -> None:
    trace = Trace(
        label="empty", seed=0, min_runners=0, max_runners=1, elapsed=0.0, jobs=(), runners=()
    )

    assert _parse(render_svg(trace)).tag == f"{SVG}svg"
