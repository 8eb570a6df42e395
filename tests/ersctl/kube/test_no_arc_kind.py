"""The runtime knows no ARC kind: each controller declares what it watches
(``ersctl.arcclient.kinds``), and no module of ``ersctl.kube`` names one of ARC's kinds
or their resources, in code, comments or docstrings."""

from __future__ import annotations

import re
from pathlib import Path

import ersctl.kube

ARC_KIND = re.compile(
    r"ephemeral_?runner(_?sets?|s)?|autoscaling_?runner_?sets?|autoscaling_?listeners?",
    re.IGNORECASE,
)
"""EphemeralRunner(Set), AutoscalingRunnerSet, AutoscalingListener, their plurals and
their snake_case spellings (``ephemeral_runner_set``)."""


def arc_kind_spellings(source: str) -> list[str]:
    return [match.group(0) for match in ARC_KIND.finditer(source)]


def test_the_pattern_finds_every_spelling_of_the_four_kinds() -> None:
    text = (
        "EphemeralRunner EphemeralRunnerSet ephemeralrunners ephemeralrunnersets "
        "AutoscalingRunnerSet autoscalingrunnersets AutoscalingListener "
        "autoscalinglisteners ephemeral_runner_set"
    )
    assert len(arc_kind_spellings(text)) == 9
    assert arc_kind_spellings("a runner set, a listener Pod, runtime.runner") == []


def test_no_module_of_the_runtime_spells_an_arc_kind() -> None:
    package = Path(ersctl.kube.__file__).parent
    found = {
        str(path.relative_to(package)): spellings
        for path in sorted(package.rglob("*.py"))
        if (spellings := arc_kind_spellings(path.read_text(encoding="utf-8")))
    }
    assert found == {}, f"ersctl.kube names ARC kinds (declare them in a controller): {found}"
