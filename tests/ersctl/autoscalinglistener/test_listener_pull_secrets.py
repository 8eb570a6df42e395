"""The controller's listener image pull Secrets (ARC's ``--auto-scaler-image-pull-secrets``,
``ersctl reconcile --listener-image-pull-secret``) reach the listener Pod of an
AutoscalingListener that names none; one that names its own keeps them."""

from __future__ import annotations

from typing import Any

from ersctl.api import AutoscalingListener
from ersctl.autoscalinglistener.objects import listener_names, listener_pod
from tests.ersctl.autoscalinglistener.conftest import listener_body, listener_settings

SETTINGS = listener_settings(image_pull_secrets=("regcred", "mirror"))


def listener(**spec: Any) -> AutoscalingListener:
    """An AL as read from the server (it has a uid, which its Pod's owner names)."""
    body = listener_body("arc-systems", "arc-runners", **spec)
    body["metadata"]["uid"] = "6f1c2d0e-0000-4000-8000-000000000001"
    return AutoscalingListener(body)


def test_a_listener_naming_no_pull_secret_gets_the_controllers() -> None:
    al = listener()
    pod = listener_pod(al, names=listener_names(al), config_json="{}", settings=SETTINGS)
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}, {"name": "mirror"}]


def test_a_listener_naming_its_own_pull_secret_keeps_it() -> None:
    al = listener(imagePullSecrets=[{"name": "own"}])
    pod = listener_pod(al, names=listener_names(al), config_json="{}", settings=SETTINGS)
    assert pod["spec"]["imagePullSecrets"] == [{"name": "own"}]


def test_without_any_the_pod_names_none() -> None:
    al = listener()
    settings = listener_settings()
    pod = listener_pod(al, names=listener_names(al), config_json="{}", settings=settings)
    assert "imagePullSecrets" not in pod["spec"]
