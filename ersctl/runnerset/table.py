"""``ersctl status``: one row per EphemeralRunnerSet, read live through the API reader.

Under the table, one line per Failed runner (name and last reason: it is deleted after
``--failed-runner-ttl``) and per set whose ``RunnersFailing`` condition is present, so
a failure stays in view after its runner is gone."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from ersctl.api import EphemeralRunner, EphemeralRunnerSet, FieldError
from ersctl.arcclient.reader import ApiReader
from ersctl.runnerset.classification import classify
from ersctl.runnerset.failures import CONDITION_TYPE, describe_failure

HEADERS: Final = (
    "NAMESPACE", "NAME", "DESIRED", "CURRENT", "PENDING", "RUNNING", "FAILED", "FINISHED",
    "DELETING",
    "PATCH-ID", "MARKER", "APPLIED-REV", "PHASE",
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """The cells of one set, already text; ``problem`` names a malformed field;
    ``notes`` are its failure lines."""

    cells: tuple[str, ...]
    problem: str = ""
    notes: tuple[str, ...] = ()


def rows_for(reader: ApiReader, sets: Sequence[EphemeralRunnerSet]) -> list[Row]:
    """Rows for ``sets``, with their runners listed once per namespace."""
    by_owner: dict[str, list[EphemeralRunner]] = {}
    for namespace in sorted({ers.namespace for ers in sets}):
        for runner in reader.list_runners(namespace):
            owner = runner.controller_owner()
            if owner is not None and owner.get("uid"):
                by_owner.setdefault(str(owner["uid"]), []).append(runner)
    ordered = sorted(sets, key=lambda ers: (ers.namespace, ers.name))
    return [row(ers, by_owner.get(ers.uid, [])) for ers in ordered]


def row(ers: EphemeralRunnerSet, runners: Iterable[EphemeralRunner]) -> Row:
    """One set's row; a malformed field shows as ``?`` and is named in ``problem``."""
    try:
        states = classify(runners, applied_revision=ers.applied_actionable_revision)
        cells = (
            ers.replicas, states.total, len(states.pending), len(states.running),
            len(states.failed), len(states.finished), len(states.deleting), ers.patch_id,
            ers.finished_runner_cleanup_patch_id, ers.applied_actionable_revision,
            ers.phase or "-",
        )  # fmt: skip
    except FieldError as exc:
        return Row((ers.namespace, ers.name, *("?" * (len(HEADERS) - 2))), problem=str(exc))
    key = f"{ers.namespace}/{ers.name}"
    notes = [f"{key}: Failed runner {describe_failure(r)}" for r in states.failed]
    notes += [
        f"{key}: {CONDITION_TYPE}={c.get('status')}: {c.get('message')}"
        for c in ers.status.get("conditions") or ()
        if isinstance(c, dict) and c.get("type") == CONDITION_TYPE
    ]
    return Row((ers.namespace, ers.name, *(str(cell) for cell in cells)), notes=tuple(notes))


def render_table(rows: Sequence[Row]) -> str:
    """Left-aligned columns like kubectl, then one line per malformed set."""
    table = [HEADERS, *(r.cells for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS))]
    lines = ["   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
             for line in table]  # fmt: skip
    lines += [f"{r.cells[0]}/{r.cells[1]}: invalid: {r.problem}" for r in rows if r.problem]
    lines += [note for r in rows for note in r.notes]
    return "\n".join(lines) + "\n"
