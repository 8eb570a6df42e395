"""Creating EphemeralRunners for a scale-up: the body (pure) and bounded-concurrency creates."""

from __future__ import annotations

import copy
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ersctl import api
from ersctl.ephemeralrunnerset.ports import Writer
from ersctl.naming import proxy_secret_name
from ersctl.platform.errors import Failure

log = logging.getLogger(__name__)


def runner_body(ers: api.EphemeralRunnerSet) -> dict[str, Any]:
    """The EphemeralRunner a scale-up of ``ers`` creates, built as ARC builds it.

    ``generateName: <ers>-runner-``. Labels: ``spec.ephemeralRunnerMetadata``'s,
    overridden by the set's own, then ``app.kubernetes.io/component: runner``.
    Annotations: ``spec.ephemeralRunnerMetadata``'s, overridden by the set's own (so the
    runner-group and scale-set name annotations an AutoscalingRunnerSet puts on its set
    reach every runner), then the patch ID and actionable revision the runner was
    created for; never the set's ``integrity-hash`` (it describes the set) nor kubectl's
    last-applied configuration (the set's whole manifest, on every runner). A set's
    metadata applies to the runners created after it changed, not to existing ones.
    Both runner finalizers; a controller ownerReference that blocks the owner's
    deletion; the spec copied from ``spec.ephemeralRunnerSpec``, with
    ``proxySecretRef`` naming the set's proxy Secret when the spec has a ``proxy``
    (``ersctl.ephemeralrunnerset.proxysecret``), as ARC sets it.
    """
    template = ers.ephemeral_runner_metadata
    labels = {
        **_str_map(template.get("labels")),
        **ers.labels,
        api.COMPONENT_LABEL: api.RUNNER_COMPONENT,
    }
    inherited = {
        key: value
        for key, value in ers.annotations.items()
        if key not in (api.INTEGRITY_HASH_ANNOTATION, api.LAST_APPLIED_ANNOTATION)
    }
    annotations = {
        **_str_map(template.get("annotations")),
        **inherited,
        api.PATCH_ID_ANNOTATION: str(ers.patch_id),
        api.ACTIONABLE_REVISION_ANNOTATION: str(ers.actionable_revision),
    }
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.ER_KIND,
        "metadata": {
            "generateName": f"{ers.name}-runner-",
            "namespace": ers.namespace,
            "labels": labels,
            "annotations": annotations,
            "finalizers": [api.ER_FINALIZER, api.ER_REGISTRATION_FINALIZER],
            "ownerReferences": [owner_reference(ers)],
        },
        "spec": _runner_spec(ers),
    }


def _runner_spec(ers: api.EphemeralRunnerSet) -> dict[str, Any]:
    spec = copy.deepcopy(ers.ephemeral_runner_spec)
    if isinstance(spec.get("proxy"), dict):  # present, even empty: ARC tests "!= nil"
        spec["proxySecretRef"] = proxy_secret_name(ers.namespace, ers.name)
    return spec


def owner_reference(ers: api.EphemeralRunnerSet) -> dict[str, Any]:
    """The controller ownerReference that ties a runner to ``ers``."""
    return api.controller_reference(ers, api.ERS_KIND)


@dataclass(frozen=True, kw_only=True)
class CreateResult:
    """How many creates succeeded, and the errors of those that failed."""

    created: int
    errors: tuple[Failure, ...]


def create_runners(
    writer: Writer, body: dict[str, Any], *, count: int, concurrency: int
) -> CreateResult:
    """Create ``count`` runners from ``body``, at most ``concurrency`` requests at a time.

    Every create is attempted; failures are collected rather than raised, so one
    refused create does not strand the others.
    """
    if count <= 0:
        return CreateResult(created=0, errors=())
    workers = max(1, min(concurrency, count))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="create-runner") as pool:
        outcomes = list(pool.map(lambda _: _create_one(writer, body), range(count)))
    errors = tuple(o for o in outcomes if o is not None)
    return CreateResult(created=count - len(errors), errors=errors)


def _create_one(writer: Writer, body: dict[str, Any]) -> Failure | None:
    try:
        writer.create_runner(copy.deepcopy(body))
    except Failure as exc:
        log.warning("creating a runner for %s failed: %s", body["metadata"]["generateName"], exc)
        return exc
    return None


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}
