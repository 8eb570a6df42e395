"""``ersctl rollout``: bump ``spec.actionableRevision`` of a set so the controller
rebuilds its idle runners from a changed runner template."""

from __future__ import annotations

from ersctl.api import ERS_CRD, FieldError
from ersctl.arcclient.errors import PrunedFieldsError
from ersctl.arcclient.reader import ApiReader
from ersctl.arcclient.writer import Writer
from ersctl.kube.client import Reader
from ersctl.kube.client import Writer as KubeWriter
from ersctl.kube.connect import api_client
from ersctl.kube.errors import ConflictError
from ersctl.kube.reconcile import Request
from ersctl.platform.errors import Failure


def rollout(key: Request, *, kubeconfig: str | None, kube_context: str | None) -> tuple[int, int]:
    """Bump the revision of the set ``key``; its old and new values."""
    api = api_client(kubeconfig, context=kube_context)
    try:
        return _bump_revision(ApiReader(Reader(api)), Writer(KubeWriter(api)), key)
    except FieldError as exc:
        raise Failure(str(exc)) from None


def _bump_revision(reader: ApiReader, writer: Writer, key: Request) -> tuple[int, int]:
    """Read, then patch with a resourceVersion precondition; retry a few conflicts.

    Raises ``PrunedFieldsError`` when the answer lacks the new revision: a CRD without
    ``spec.actionableRevision`` (ARC's) drops it, and nothing would ever be rebuilt."""
    for attempt in range(5):
        ers = reader.get_ers(key.namespace, key.name)
        if ers is None:
            raise Failure(f"EphemeralRunnerSet {key} not found")
        old = ers.actionable_revision
        patch = {
            "metadata": {"resourceVersion": ers.resource_version},
            "spec": {"actionableRevision": old + 1},
        }
        try:
            written = writer.patch_ers(ers, patch)
        except ConflictError:
            if attempt == 4:
                raise
            continue
        if written.spec.get("actionableRevision") != old + 1:
            raise PrunedFieldsError({ERS_CRD: ["spec.actionableRevision"]})
        return old, old + 1
    raise AssertionError("unreachable")
