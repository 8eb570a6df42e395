"""``python examples/soak.py`` as users run it: 100 jobs through the whole system (two
leader-elected controller replicas, the ARS's listener, the runner controller) with
every kind of fault at seeded moments, and every invariant of its ``--json`` holding.

The same run at 1,000 jobs is the soak of issue 15 (its table is in the closing note).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simulation.faults import SOAK_KINDS

from tests.examples.test_command_line import simulate

SOAK = Path(__file__).resolve().parents[2] / "examples" / "soak.py"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_a_hundred_jobs_under_every_kind_of_fault_hold_every_invariant(tmp_path: Path) -> None:
    result_path = tmp_path / "soak.json"
    proc = simulate(
        *("--jobs", "100", "--rate", "4", "--seed", "3", "--quiet"),
        *("--json", str(result_path), "--workdir", str(tmp_path / "work")),
        script=SOAK,
        timeout=170,
    )
    out = proc.stdout + proc.stderr
    result = json.loads(result_path.read_text())

    failed = [row for row in result["invariants"] if not row["ok"]]
    assert failed == [], out
    assert proc.returncode == 0, out
    assert result["seed"] == 3 and result["jobs"] == 100
    assert "examples/soak.py --jobs 100" in result["command"]
    assert "--seed 3" in out and "every invariant holds" in out
    fired = {mark.rsplit("@", 1)[0] for mark in result["report"]["marks"]}
    assert fired == {str(kind) for kind in SOAK_KINDS}
    assert result["failovers"] and all(f["acquired_at"] for f in result["failovers"])
    assert result["report"]["jobs_queued"] == 100


def test_a_bad_option_is_one_line_and_exit_code_2_before_anything_starts() -> None:
    proc = simulate("--jobs", "0", script=SOAK, timeout=20)

    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "soak.py: argument --jobs: expected a whole number >= 1, got '0'"
    ]
    assert proc.stdout == ""
