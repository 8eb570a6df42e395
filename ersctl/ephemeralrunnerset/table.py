"""``ersctl status``: the scale sets' objects, read live through the API reader.

Text (the default): one row per EphemeralRunnerSet; under the table, one line per Failed
runner (name and last reason: it is deleted after ``--failed-runner-ttl``) and per set
whose ``RunnersFailing`` condition is present, so a failure stays in view after its
runner is gone; then, when there are any, a second table of the AutoscalingRunnerSets,
each with the EphemeralRunnerSet it owns.

``-o json``: one object, ``{"ephemeralRunnerSets": [...], "autoscalingRunnerSets":
[...]}``, every item with every key of :data:`ERS_KEYS` or :data:`ARS_KEYS` (stable:
scripts may rely on them), a value that is not known ``null``, ``problem`` naming the
malformed field that made it so (else ``null``), ``notes`` the failure lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from ersctl.api import (
    ARS_PLURAL,
    AutoscalingRunnerSet,
    EphemeralRunner,
    EphemeralRunnerSet,
    FieldError,
)
from ersctl.arcclient.reader import ApiReader
from ersctl.ephemeralrunnerset.classification import classify
from ersctl.ephemeralrunnerset.failurepolicy import CONDITION_TYPE, describe_failure
from ersctl.kube.errors import NotFoundError

ERS_COLUMNS: Final = (
    ("NAMESPACE", "namespace"), ("NAME", "name"), ("DESIRED", "desired"),
    ("CURRENT", "current"), ("PENDING", "pending"), ("RUNNING", "running"),
    ("FAILED", "failed"), ("FINISHED", "finished"), ("DELETING", "deleting"),
    ("PATCH-ID", "patchID"), ("MARKER", "finishedRunnerCleanupPatchID"),
    ("APPLIED-REV", "appliedActionableRevision"), ("PHASE", "phase"),
)  # fmt: skip
"""Table header -> JSON key of an EphemeralRunnerSet."""
ARS_COLUMNS: Final = (
    ("NAMESPACE", "namespace"), ("NAME", "name"), ("MIN", "minRunners"),
    ("MAX", "maxRunners"), ("SCALE-SET-ID", "runnerScaleSetId"),
    ("RUNNER-SET", "ephemeralRunnerSet"), ("PHASE", "phase"), ("STATE", "state"),
)  # fmt: skip
"""Table header -> JSON key of an AutoscalingRunnerSet (``maxRunners`` null: no limit;
``runnerScaleSetId`` null: not registered yet)."""
ERS_KEYS: Final = (*(key for _, key in ERS_COLUMNS), "problem", "notes")
ARS_KEYS: Final = (*(key for _, key in ARS_COLUMNS), "problem", "notes")
HEADERS: Final = tuple(header for header, _ in ERS_COLUMNS)

Value = str | int | None


@dataclass(frozen=True)
class Row:
    """One object's values by JSON key (None: unknown or unset); ``problem`` names a
    malformed field; ``notes`` are its failure lines."""

    values: Mapping[str, Value]
    problem: str = ""
    notes: tuple[str, ...] = field(default=())

    def cells(self, columns: Sequence[tuple[str, str]]) -> tuple[str, ...]:
        unknown = "?" if self.problem else "-"
        return tuple(_cell(self.values.get(key), unknown) for _, key in columns)

    def document(self, columns: Sequence[tuple[str, str]]) -> dict[str, object]:
        doc: dict[str, object] = {key: self.values.get(key) for _, key in columns}
        return {**doc, "problem": self.problem or None, "notes": list(self.notes)}


def _cell(value: Value, unknown: str) -> str:
    return unknown if value is None or value == "" else str(value)


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
    """One set's row; a malformed field leaves the counts unknown, named in ``problem``."""
    names: dict[str, Value] = {"namespace": ers.namespace, "name": ers.name}
    try:
        states = classify(runners, applied_revision=ers.applied_actionable_revision)
        counts: dict[str, Value] = {
            "desired": ers.replicas, "current": states.total,
            "pending": len(states.pending), "running": len(states.running),
            "failed": len(states.failed), "finished": len(states.finished),
            "deleting": len(states.deleting), "patchID": ers.patch_id,
            "finishedRunnerCleanupPatchID": ers.finished_runner_cleanup_patch_id,
            "appliedActionableRevision": ers.applied_actionable_revision,
            "phase": ers.phase or None,
        }  # fmt: skip
    except FieldError as exc:
        return Row(names, problem=str(exc))
    key = f"{ers.namespace}/{ers.name}"
    notes = [f"{key}: Failed runner {describe_failure(r)}" for r in states.failed]
    notes += [
        f"{key}: {CONDITION_TYPE}={c.get('status')}: {c.get('message')}"
        for c in ers.status.get("conditions") or ()
        if isinstance(c, dict) and c.get("type") == CONDITION_TYPE
    ]
    return Row({**names, **counts}, notes=tuple(notes))


def scale_set_rows(
    reader: ApiReader, namespace: str | None, sets: Sequence[EphemeralRunnerSet]
) -> list[Row]:
    """A row per AutoscalingRunnerSet of ``namespace`` (None: all), each naming the set
    of ``sets`` it owns; none where the AutoscalingRunnerSet CRD is not installed."""
    try:
        found = [AutoscalingRunnerSet(doc) for doc in reader.list_objects(ARS_PLURAL, namespace)]
    except NotFoundError:
        return []
    owned = {str(owner.get("uid")): ers.name for ers in sets if (owner := ers.controller_owner())}
    ordered = sorted(found, key=lambda ars: (ars.namespace, ars.name))
    return [_scale_set_row(ars, owned.get(ars.uid)) for ars in ordered]


def _scale_set_row(ars: AutoscalingRunnerSet, runner_set: str | None) -> Row:
    values: dict[str, Value] = {
        "namespace": ars.namespace,
        "name": ars.name,
        "ephemeralRunnerSet": runner_set,
        "runnerScaleSetId": ars.scale_set_id or None,
    }
    try:
        values |= {"phase": ars.phase or None, "state": ars.state or None}
        values |= {"minRunners": ars.min_runners, "maxRunners": ars.max_runners}
    except FieldError as exc:
        return Row(values, problem=str(exc))
    return Row(values)


def render_table(rows: Sequence[Row], scale_sets: Sequence[Row] = ()) -> str:
    """Left-aligned columns like kubectl, then one line per malformed or failing set;
    then the AutoscalingRunnerSets' table, when there are any."""
    text = _table(ERS_COLUMNS, rows)
    return text + ("\n" + _table(ARS_COLUMNS, scale_sets) if scale_sets else "")


def _table(columns: Sequence[tuple[str, str]], rows: Sequence[Row]) -> str:
    table = [tuple(header for header, _ in columns), *(r.cells(columns) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    lines = ["   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
             for line in table]  # fmt: skip
    lines += [f"{r.values['namespace']}/{r.values['name']}: invalid: {r.problem}"
              for r in rows if r.problem]  # fmt: skip
    lines += [note for r in rows for note in r.notes]
    return "\n".join(lines) + "\n"


def render_json(rows: Sequence[Row], scale_sets: Sequence[Row]) -> str:
    """The ``-o json`` document (see the module docstring)."""
    doc = {
        "ephemeralRunnerSets": [r.document(ERS_COLUMNS) for r in rows],
        "autoscalingRunnerSets": [r.document(ARS_COLUMNS) for r in scale_sets],
    }
    return json.dumps(doc, indent=2) + "\n"
