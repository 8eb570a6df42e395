"""``ersctl status``: the EphemeralRunnerSets with their runners' counts and the
AutoscalingRunnerSets, read live (``ersctl.ephemeralrunnerset.table``)."""

from __future__ import annotations

from ersctl.arcclient.reader import ApiReader
from ersctl.ephemeralrunnerset.table import render_json, render_table, rows_for, scale_set_rows
from ersctl.kube.client import Reader
from ersctl.kube.connect import api_client
from ersctl.kube.reconcile import Request
from ersctl.platform.errors import Failure


def status(
    key: Request | None,
    *,
    namespace: str | None,
    output: str,
    kubeconfig: str | None,
    kube_context: str | None,
) -> str:
    """The sets (all, ``namespace``'s, or the set ``key`` and its AutoscalingRunnerSet),
    rendered as ``output`` asks."""
    reader = ApiReader(Reader(api_client(kubeconfig, context=kube_context)))
    if key is not None:
        ers = reader.get_ers(key.namespace, key.name)
        if ers is None:
            raise Failure(f"EphemeralRunnerSet {key} not found")
        sets = [ers]
    else:
        sets = reader.list_ers(namespace)
    rows = rows_for(reader, sets)
    scale_sets = scale_set_rows(reader, key.namespace if key else namespace, sets)
    if key is not None:  # the one that owns the set, if any
        scale_sets = [r for r in scale_sets if r.values["ephemeralRunnerSet"] == key.name]
    render = render_json if output == "json" else render_table
    return render(rows, scale_sets)
