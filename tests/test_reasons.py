"""One enum of Event reasons: the recorder takes nothing else, so a reason written as a
literal at a call site (the third spelling there used to be) fails the type check."""

from __future__ import annotations

from pathlib import Path

from mypy import api as mypy

from ersctl.reasons import Reason

CALL_SITE = """\
from ersctl.api import EphemeralRunnerSet
from ersctl.kube.events import EventRecorder as Recorder
from ersctl.kube.reconcile import EventRecorder
from ersctl.reasons import Reason


def record(events: EventRecorder, recorder: Recorder, ers: EphemeralRunnerSet) -> None:
    events.event(ers, type="Normal", reason=Reason.SCALED_UP, message="m")
    recorder.event(ers, type="Normal", reason=Reason.SCALED_UP, message="m")
    events.event(ers, type="Normal", reason={literal!r}, message="m")
    recorder.event(ers, type="Normal", reason={literal!r}, message="m")
"""


def test_a_literal_reason_fails_the_type_check_of_both_recorders(tmp_path: Path) -> None:
    # "ScaledUp" is a member's value: a literal is refused even when it spells one.
    source = tmp_path / "call_site.py"
    source.write_text(CALL_SITE.format(literal="ScaledUp"), encoding="utf-8")
    # --no-site-packages: the check is between our modules and the standard library;
    # without it mypy also reads the kubernetes client (it ships py.typed, 948 modules),
    # 8 of this test's 9 CPU-s, for types no recorder's reason parameter involves.
    out, err, code = mypy.run([
        str(source), "--strict", "--follow-imports", "silent", "--no-site-packages",
        "--cache-dir", str(tmp_path / "cache"),
    ])  # fmt: skip
    assert code == 1, out + err
    refused = [line for line in out.splitlines() if 'Argument "reason"' in line]
    assert [line.split(":")[1] for line in refused] == ["10", "11"], out


def test_no_two_reasons_share_a_string() -> None:
    # A StrEnum member with another's value would silently become its alias.
    assert len(Reason.__members__) == len({member.value for member in Reason})
