"""What ARC's controller expects to find for a scale set when it runs again, read from
ARC's resource builder and controllers (0.14.2's and 0.15.1's; each check says what
ARC does with it): :func:`what_arc_would_not_find` lists every way the cluster differs,
so a switch back to ARC's image meets its own objects where it looks for them, and
makes none a second time.

How ARC finds things: the runner set by its owner (0.14) or by the ARS's name (0.15),
its runners by owner, a runner's JIT Secret and Pod by the runner's name, the listener
by ARC's name in the controller's namespace, the listener's ServiceAccount, Role,
RoleBinding and config Secret by name. It never checks who made an object, so it adopts
ours as long as these hold. Hash annotations may carry our values: ARC then rebuilds
that object once (README, Coming from ARC), which is not a second object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ersctl import api
from tests.deploy.arc_objects import (
    ARS,
    CHART_OBJECTS,
    GITHUB_SECRET,
    GO_HASH,
    MAX_RUNNERS,
    MIN_RUNNERS,
    RUNNER_POD_LABEL,
    VALUES_HASH,
    arc_labels,
    arc_listener_name,
    arc_rbac_name,
    chart_labels,
)
from tests.deploy.chart_manager import CONTROLLER_NS, RUNNERS_NS
from tests.deploy.live_arc import LiveArc

Json = dict[str, Any]


def what_arc_would_not_find(live: LiveArc) -> list[str]:
    """Every way the cluster differs from what ARC's controller of ``live.version``
    expects for the scale set ("" lines never: each names the object and the rule)."""
    problems: list[str] = []
    ars = live.server.get_object(api.ARS_PLURAL, RUNNERS_NS, ARS)
    if ars is None:
        return ["the AutoscalingRunnerSet is gone"]
    problems += _scale_set(live, ars)
    ers = _runner_set(live, ars, problems)
    if ers is not None:
        problems += _runners(live, ers)
    problems += _listener(live)
    problems += _chart_objects(live)
    return problems


def _lacks(what: str, have: Mapping[str, Any] | None, want: Mapping[str, Any]) -> list[str]:
    have = have or {}
    return [
        f"{what}: {key}={have.get(key)!r}, ARC wants {value!r}"
        for key, value in want.items()
        if have.get(key) != value
    ]


def _meta(obj: Json, key: str) -> Any:
    return (obj.get("metadata") or {}).get(key)


def _finalized(what: str, obj: Json, *finalizers: str) -> list[str]:
    missing = [f for f in finalizers if f not in (_meta(obj, "finalizers") or [])]
    return [
        f"{what}: no finalizer {f} (ARC's; its deletion would skip ARC's cleanup)" for f in missing
    ]


def _controls(owner: Json, kind: str, obj: Json) -> bool:
    refs = [r for r in _meta(obj, "ownerReferences") or [] if r.get("controller")]
    return [(r.get("kind"), r.get("uid")) for r in refs] == [(kind, _meta(owner, "uid"))]


def _controlled_by(what: str, obj: Json, kind: str, owner: Json) -> list[str]:
    if _controls(owner, kind, obj):
        return []
    return [f"{what}: not controlled by {kind} {_meta(owner, 'name')} (ARC finds it by owner)"]


def _scale_set(live: LiveArc, ars: Json) -> list[str]:
    wanted = {
        api.RUNNER_SCALE_SET_ID_ANNOTATION: str(live.scale_set_id),  # no second registration
        api.RUNNER_GROUP_NAME_ANNOTATION: "Default",
        api.RUNNER_SCALE_SET_NAME_ANNOTATION: ARS,
        api.VALUES_HASH_ANNOTATION: VALUES_HASH,  # Helm's: ARC 0.14 compares the listener's
        api.CLEANUP_SECRET_ANNOTATION: GITHUB_SECRET,
        **{annotation: name for annotation, (_, name) in CHART_OBJECTS.items()},
    }
    return [
        *_finalized("ARS", ars, api.ARS_FINALIZER),
        *_lacks("ARS annotation", _meta(ars, "annotations"), wanted),
        *_lacks("ARS label", _meta(ars, "labels"), chart_labels(live.version)),
    ]


def _runner_set(live: LiveArc, ars: Json, problems: list[str]) -> Json | None:
    owned = [
        ers
        for ers in live.server.list_objects(api.ERS_PLURAL, RUNNERS_NS)
        if _controls(ars, api.ARS_KIND, ers)
    ]
    if len(owned) != 1:
        problems.append(f"{len(owned)} runner sets owned by the ARS: ARC keeps one")
        return None
    (ers,) = owned
    # 0.15 gets the set by the ARS's name; 0.14 lists the ARS's sets and keeps the
    # generated name (a new name would be a new set to ARC 0.14's hash check too).
    name = ARS if live.line == "0.15" else live.ers
    if _meta(ers, "name") != name:
        problems.append(f"runner set {_meta(ers, 'name')}: ARC {live.version} looks for {name}")
    annotations = _meta(ers, "annotations") or {}
    if annotations.get(live.spec_hash_key) != GO_HASH:
        # Its template never changed here: ARC compares its hash of the ARS's template
        # with this one, and on a difference rebuilds every runner (0.14: a new set).
        problems.append(f"runner set: {live.spec_hash_key} is not ARC's own any more")
    spec = (ers.get("spec") or {}).get("ephemeralRunnerSpec") or {}
    problems += [
        *_finalized("runner set", ers, api.ERS_FINALIZER),
        *_lacks("runner set label", _meta(ers, "labels"), arc_labels(live.version, "runner-set")),
        *_lacks(
            "runner set annotation",
            annotations,
            {
                api.RUNNER_GROUP_NAME_ANNOTATION: "Default",
                api.RUNNER_SCALE_SET_NAME_ANNOTATION: ARS,
            },
        ),
        *_lacks(
            "runner spec",
            spec,
            {
                "githubConfigUrl": live.config_url,
                "githubConfigSecret": GITHUB_SECRET,
                "runnerScaleSetId": live.scale_set_id,
            },
        ),
    ]
    return ers


def _runners(live: LiveArc, ers: Json) -> list[str]:
    problems: list[str] = []
    for runner in live.server.list_objects(api.ER_PLURAL, RUNNERS_NS):
        name = _meta(runner, "name")
        what = f"runner {name}"
        problems += _controlled_by(what, runner, api.ERS_KIND, ers)
        problems += _finalized(what, runner, api.ER_FINALIZER, api.ER_REGISTRATION_FINALIZER)
        problems += _lacks(what, _meta(runner, "labels"), {api.COMPONENT_LABEL: "runner"})
        if not str((_meta(runner, "annotations") or {}).get(api.PATCH_ID_ANNOTATION, "")).isdigit():
            problems.append(f"{what}: no {api.PATCH_ID_ANNOTATION} (ARC's set compares it)")
        status = runner.get("status") or {}
        if _meta(runner, "deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed"):
            continue  # done: its Secret and Pod go
        problems += _runner_secret_and_pod(live, runner)
    return problems


def _runner_secret_and_pod(live: LiveArc, runner: Json) -> list[str]:
    name = _meta(runner, "name")
    problems: list[str] = []
    secret = live.server.get_object("secrets", RUNNERS_NS, name)
    if secret is None:
        return [f"runner {name}: no JIT Secret of its name (ARC registers it again)"]
    problems += _controlled_by(f"JIT Secret {name}", secret, api.ER_KIND, runner)
    missing = {"jitToken", "runnerName", "runnerId"} - set(secret.get("data") or {})
    if missing:
        problems.append(f"JIT Secret {name}: no {sorted(missing)} (ARC reads them)")
    pod = live.server.get_object("pods", RUNNERS_NS, name)
    if pod is None:
        return [*problems, f"runner {name}: no Pod of its name (ARC makes another)"]
    problems += _controlled_by(f"runner Pod {name}", pod, api.ER_KIND, runner)
    problems += _lacks(f"runner Pod {name} label", _meta(pod, "labels"), {RUNNER_POD_LABEL: "True"})
    env = [
        e
        for c in pod["spec"]["containers"]
        if c["name"] == "runner"
        for e in c.get("env") or []
        if e["name"] == "ACTIONS_RUNNER_INPUT_JITCONFIG"
    ]
    if env != [
        {
            "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
            "valueFrom": {"secretKeyRef": {"name": name, "key": "jitToken"}},
        }
    ]:
        problems.append(f"runner Pod {name}: its JIT config is not the Secret's jitToken: {env}")
    return problems


def _listener(live: LiveArc) -> list[str]:
    name = arc_listener_name(RUNNERS_NS, "", live.config_url, ARS)
    listeners = [
        (_meta(al, "namespace"), _meta(al, "name"))
        for al in live.server.list_objects(api.AL_PLURAL)
        if (al.get("spec") or {}).get("autoscalingRunnerSetName") == ARS
    ]
    if listeners != [(CONTROLLER_NS, name)]:
        return [f"listeners {listeners}: ARC looks for {CONTROLLER_NS}/{name} alone"]
    al = live.get(api.AL_PLURAL, CONTROLLER_NS, name)
    problems = [
        *_finalized("listener", al, api.AL_FINALIZER),
        *_lacks(
            "listener label", _meta(al, "labels"), arc_labels(live.version, api.LISTENER_COMPONENT)
        ),
        *_lacks(
            "listener spec",
            al.get("spec"),
            {
                "githubConfigUrl": live.config_url,
                "githubConfigSecret": GITHUB_SECRET,
                "runnerScaleSetId": live.scale_set_id,
                "autoscalingRunnerSetNamespace": RUNNERS_NS,
                "ephemeralRunnerSetName": ARS if live.line == "0.15" else live.ers,
                "minRunners": MIN_RUNNERS,
                "maxRunners": MAX_RUNNERS,
            },
        ),
    ]
    if _meta(al, "ownerReferences"):
        problems.append("listener: an ownerReference (none may cross namespaces; ARC sets none)")
    return problems + _listener_objects(live, al)


def _listener_objects(live: LiveArc, al: Json) -> list[str]:
    name = _meta(al, "name")
    rbac = arc_rbac_name(live.line, name, RUNNERS_NS, ARS)
    problems: list[str] = []
    pod = live.server.get_object("pods", CONTROLLER_NS, name)
    if pod is None:
        problems.append(f"no listener Pod {name} (ARC makes one)")
    else:
        problems += _controlled_by("listener Pod", pod, api.AL_KIND, al)
        if pod["spec"].get("serviceAccountName") != rbac:
            problems.append(
                f"listener Pod: ServiceAccount {pod['spec'].get('serviceAccountName')}, ARC's is {rbac}"
            )
        if [c["name"] for c in pod["spec"]["containers"]][:1] != ["listener"]:
            problems.append("listener Pod: its first container is not ARC's 'listener'")
    config = live.server.get_object("secrets", CONTROLLER_NS, f"{name}-config")
    if config is None or "config.json" not in (config.get("data") or {}):
        problems.append(f"no config Secret {name}-config with config.json")
    else:
        problems += _controlled_by("config Secret", config, api.AL_KIND, al)
    scale_set = {api.SCALE_SET_NAMESPACE_LABEL: RUNNERS_NS, api.SCALE_SET_NAME_LABEL: ARS}
    by_listener = {
        **scale_set,
        "auto-scaling-listener-namespace": CONTROLLER_NS,
        "auto-scaling-listener-name": name,
    }
    for plural, namespace, labels in (
        ("serviceaccounts", CONTROLLER_NS, scale_set),
        ("roles", RUNNERS_NS, by_listener),
        ("rolebindings", RUNNERS_NS, by_listener),
    ):
        found = [
            o for o in live.server.list_objects(plural, namespace) if _is_listeners(o, scale_set)
        ]
        names = sorted(_meta(o, "name") for o in found)
        if names != [rbac]:
            problems.append(f"listener {plural} {names}: ARC {live.version} uses {rbac} alone")
            continue
        problems += _lacks(f"listener {plural} label", _meta(found[0], "labels"), labels)
        if plural == "serviceaccounts" and live.line == "0.15":
            problems += _controlled_by("listener ServiceAccount", found[0], api.AL_KIND, al)
    problems += _role_binding(live, rbac)
    return problems


def _is_listeners(obj: Json, scale_set: dict[str, str]) -> bool:
    labels = _meta(obj, "labels") or {}
    return all(labels.get(k) == v for k, v in scale_set.items()) and not CHART_NAMES.intersection(
        {_meta(obj, "name")}
    )


CHART_NAMES = frozenset(name for _, name in CHART_OBJECTS.values())


def _role_binding(live: LiveArc, rbac: str) -> list[str]:
    binding = live.server.get_object("rolebindings", RUNNERS_NS, rbac)
    role = live.server.get_object("roles", RUNNERS_NS, rbac)
    if binding is None or role is None:
        return []
    problems = []
    if binding["roleRef"].get("name") != rbac:
        problems.append(
            f"listener RoleBinding binds Role {binding['roleRef'].get('name')}, not {rbac}"
        )
    if binding.get("subjects") != [
        {"kind": "ServiceAccount", "name": rbac, "namespace": CONTROLLER_NS}
    ]:
        problems.append(f"listener RoleBinding subjects {binding.get('subjects')}")
    if live.line == "0.14" and not (_meta(role, "labels") or {}).get("role-policy-rules-hash"):
        problems.append("listener Role: no role-policy-rules-hash label (ARC 0.14 compares it)")
    return problems


def _chart_objects(live: LiveArc) -> list[str]:
    problems = []
    for plural, name in [*CHART_OBJECTS.values(), ("secrets", GITHUB_SECRET)]:
        obj = live.server.get_object(plural, RUNNERS_NS, name)
        if obj is None:
            problems.append(f"the chart's {plural} {name} is gone")
        else:
            problems += _finalized(
                f"the chart's {plural} {name}", obj, api.CLEANUP_PROTECTION_FINALIZER
            )
    return problems
