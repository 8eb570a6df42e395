"""An AutoscalingRunnerSet made by ARC's Helm chart names, in ARC's cleanup annotations,
the objects the chart protected with ``actions.github.com/cleanup-protection`` (its
ServiceAccounts, Roles, RoleBindings and the credentials Secret). Deleting the ARS
takes that finalizer (and no other) off each of them, last, once the scale set is gone
on GitHub: otherwise ``helm uninstall`` and the namespace's deletion hang on them."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from ersctl import api
from ersctl.testing.apiserver import ApiServer
from tests.arc_chart import protected_rbac, rbac_object
from tests.ersctl.autoscalingrunnerset.conftest import CREDENTIALS, Env
from tests.polling import eventually

HELD = "tests.example/held"  # another controller's finalizer: never ours to remove
NAME = "arc-runners"
KUBE_MODE = f"{NAME}-gha-rs-kube-mode"
CHART_OBJECTS = {**protected_rbac(NAME), api.CLEANUP_SECRET_ANNOTATION: ("secrets", CREDENTIALS)}


def _chart_release(
    env: Env, *, absent: tuple[str, ...] = (), held: str = "", registered: bool = True
) -> None:
    """What ``helm install`` of ARC's chart leaves for one scale set, registered on
    GitHub by ARC's controller (unless not ``registered``): the ARS with ARC's
    annotations and finalizer, and the protected objects (except those of the
    ``absent`` annotations; the one of ``held`` also carries another finalizer)."""
    registration: dict[str, str] = {}
    if registered:
        scale_set = env.sim.create_scale_set(NAME, labels=[NAME])
        registration = {
            api.RUNNER_SCALE_SET_ID_ANNOTATION: str(scale_set["id"]),
            api.RUNNER_SCALE_SET_NAME_ANNOTATION: NAME,
            api.RUNNER_GROUP_NAME_ANNOTATION: "Default",
        }
    env.create_secret()
    for annotation, (plural, name) in CHART_OBJECTS.items():
        also = (HELD,) if annotation == held else ()
        if annotation in absent:
            continue
        if plural == "secrets":
            finalizers = [api.CLEANUP_PROTECTION_FINALIZER, *also]
            patch = {"metadata": {"finalizers": finalizers}}
            env.kube.patch_object(plural, env.namespace, name, patch)
        else:
            env.kube.create_object(plural, rbac_object(plural, name, env.namespace, also=also))
    body = env.ars_body(NAME, minRunners=0, maxRunners=4)
    body["metadata"] |= {
        "annotations": {
            **registration,
            api.VALUES_HASH_ANNOTATION: "4f1e2d",
            **{annotation: name for annotation, (_, name) in CHART_OBJECTS.items()},
        },
        "finalizers": [api.ARS_FINALIZER],
    }
    env.kube.create_object(api.ARS_PLURAL, body)


def _finalizers(env: Env) -> dict[str, list[str] | None]:
    """Each annotation's object's finalizers (None: the object does not exist)."""
    found: dict[str, list[str] | None] = {}
    for annotation, (plural, name) in CHART_OBJECTS.items():
        obj = env.kube.get_object(plural, env.namespace, name)
        found[annotation] = None if obj is None else list(obj["metadata"].get("finalizers") or [])
    return found


def _released() -> dict[str, list[str] | None]:
    """What :func:`_finalizers` says once every object was released."""
    return {annotation: [] for annotation in CHART_OBJECTS}


def _release_held(env: Env, annotation: str) -> None:
    """Drop the test's own finalizer, so a real cluster can delete the namespace."""
    plural, name = CHART_OBJECTS[annotation]
    env.kube.patch_object(plural, env.namespace, name, {"metadata": {"finalizers": None}})


def test_deleting_a_chart_made_ars_releases_every_object_it_names_and_nothing_else(
    env: Env,
) -> None:
    held = "actions.github.com/cleanup-kubernetes-mode-role-name"
    _chart_release(env, held=held)
    env.start()
    env.running(NAME)
    assert all(f and api.CLEANUP_PROTECTION_FINALIZER in f for f in _finalizers(env).values())

    env.kube.delete_object(api.ARS_PLURAL, env.namespace, NAME)

    eventually(lambda: env.ars(NAME) is None, what="the ARS gone", timeout=10)
    assert env.sim.scale_sets == {}
    finalizers = _finalizers(env)
    assert finalizers == _released() | {held: [HELD]}
    _release_held(env, held)


def test_an_ars_refused_for_bad_input_still_releases_what_the_chart_protected(
    env: Env,
) -> None:
    # A typo in the chart's values: the controller never gets as far as GitHub, and
    # `helm uninstall` must still not hang on the objects the chart protected.
    _chart_release(env, registered=False)
    env.patch_ars(
        NAME, {"metadata": {"finalizers": None}, "spec": {"githubConfigUrl": "not a url"}}
    )
    env.start()
    eventually(lambda: env.state(NAME) == "InvalidSpec", what="the ARS refused")

    env.kube.delete_object(api.ARS_PLURAL, env.namespace, NAME)

    eventually(lambda: env.ars(NAME) is None, what="the ARS gone", timeout=10)
    assert _finalizers(env) == _released()


def test_an_annotation_naming_an_object_that_is_gone_does_not_hold_the_teardown(
    env: Env,
) -> None:
    gone = (
        "actions.github.com/cleanup-manager-role-binding",
        "actions.github.com/cleanup-no-permission-service-account-name",
    )
    _chart_release(env, absent=gone)
    env.start()
    env.running(NAME)

    env.kube.delete_object(api.ARS_PLURAL, env.namespace, NAME)

    eventually(lambda: env.ars(NAME) is None, what="the ARS gone", timeout=10)
    assert _finalizers(env) == _released() | dict.fromkeys(gone)


def test_the_protection_stays_until_the_scale_set_is_deleted_on_github(env: Env) -> None:
    _chart_release(env)
    env.start()
    env.running(NAME)
    env.sim.inject_fault(endpoint="delete_scale_set", status=503, times=1000)

    env.kube.delete_object(api.ARS_PLURAL, env.namespace, NAME)

    eventually(
        lambda: env.events("GitHubCallFailed", "Warning"), what="a Warning Event", timeout=10
    )
    assert env.ars(NAME) is not None and env.sim.scale_sets
    protected = [api.CLEANUP_PROTECTION_FINALIZER]
    assert _finalizers(env) == dict.fromkeys(CHART_OBJECTS, protected)

    env.sim.faults.clear()  # GitHub answers again

    eventually(lambda: env.ars(NAME) is None, what="the ARS gone", timeout=15)
    assert env.sim.scale_sets == {}
    assert _finalizers(env) == _released()


@pytest.mark.embedded_only("fault injection: the 403 a missing RBAC grant gives")
def test_an_unreadable_object_holds_the_teardown_with_a_warning_but_an_unreadable_secret_does_not(
    env: Env, apiserver: ApiServer
) -> None:
    # Deleted before any scale set was registered: the teardown needs no GitHub call,
    # so nothing but the release reads the credentials Secret.
    _chart_release(env, registered=False)
    env.kube.delete_object(api.ARS_PLURAL, env.namespace, NAME)
    # ARC's rules: a Secret the controller may not read counts as gone; any other object
    # it may not read is retried (its finalizer would hold the namespace forever).
    unreadable = apiserver.inject_fault(
        verb="get", resource="secrets", name=CREDENTIALS, code=403, times=1000
    )
    forbidden = apiserver.inject_fault(
        verb="get", resource="serviceaccounts", name=KUBE_MODE, code=403, times=1000
    )
    env.start()

    (event, *_) = eventually(
        lambda: env.events("ReconcileFailed", "Warning"), what="a Warning Event", timeout=10
    )
    assert event["message"].startswith(
        f"get serviceaccounts/{env.namespace}/{KUBE_MODE}: HTTP 403 Forbidden"
    )
    assert env.ars(NAME) is not None
    forbidden.remaining = 0  # the grant is fixed

    eventually(lambda: env.ars(NAME) is None, what="the ARS gone", timeout=15)
    unreadable.remaining = 0  # for the test's own reads
    secret = [api.CLEANUP_PROTECTION_FINALIZER]
    assert _finalizers(env) == _released() | {api.CLEANUP_SECRET_ANNOTATION: secret}


def _add_held(env: Env, plural: str, name: str) -> None:
    patch = {"metadata": {"finalizers": [api.CLEANUP_PROTECTION_FINALIZER, HELD]}}
    env.kube.patch_object(plural, env.namespace, name, patch)


def _delete_outright(env: Env, plural: str, name: str) -> None:
    env.kube.patch_object(plural, env.namespace, name, {"metadata": {"finalizers": None}})
    env.kube.delete_object(plural, env.namespace, name)


@pytest.mark.embedded_only("a held request: the change lands between the read and the patch")
@pytest.mark.parametrize(
    ("meanwhile", "expected"),
    [
        pytest.param(_add_held, [HELD], id="another finalizer added"),
        pytest.param(_delete_outright, None, id="the object deleted"),
    ],
)
def test_a_change_between_the_read_and_the_release_is_neither_lost_nor_an_error(
    env: Env, apiserver: ApiServer, meanwhile: Any, expected: list[str] | None
) -> None:
    annotation = "actions.github.com/cleanup-manager-role-name"
    plural, name = CHART_OBJECTS[annotation]
    _chart_release(env)
    env.start()
    env.running(NAME)
    release = threading.Event()
    held = apiserver.inject_fault(verb="patch", resource=plural, name=name, hold=release)

    env.kube.delete_object(api.ARS_PLURAL, env.namespace, NAME)
    assert held.taken.wait(timeout=10), "the release's patch never came"
    meanwhile(env, plural, name)
    release.set()

    eventually(lambda: env.ars(NAME) is None, what="the ARS gone", timeout=15)
    assert _finalizers(env)[annotation] == expected
    assert env.events("ReconcileFailed", "Warning") == []
    if expected:
        _release_held(env, annotation)
