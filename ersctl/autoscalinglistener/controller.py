"""Registers the AutoscalingListener controller on the runtime's manager.

Its primary resource is ``autoscalinglisteners`` (every event passes: the finalizer,
the deletion and the spec all matter, and its own status writes are rare: one per
listener exit). It owns the listener Pods, which the manager already watches through
the label-selected informer of ARC's running-listeners gauge (``app.kubernetes.io/
component=runner-scale-set-listener``, a label every listener Pod carries): a Pod
event maps to the AutoscalingListener named by its controller ownerReference. The
Secrets, ServiceAccounts, Roles and RoleBindings are not watched (see
``ersctl.autoscalinglistener.stores``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from ersctl.arcclient.kinds import LISTENERS
from ersctl.arcclient.reader import ApiReader
from ersctl.autoscalinglistener.inputs import ScaleSetInputs
from ersctl.autoscalinglistener.objects import ListenerSettings
from ersctl.autoscalinglistener.reconciler import ListenerReconciler
from ersctl.autoscalinglistener.restarts import RestartPolicy
from ersctl.autoscalinglistener.stores import KubeListenerResources
from ersctl.kube.client import ApiClient
from ersctl.kube.informer import PodInformer
from ersctl.kube.manager import Manager
from ersctl.kube.predicates import AlwaysPass

CONTROLLER_NAME: Final = "autoscalinglistener"


def add_listener_controller(
    manager: Manager,
    api_client: ApiClient,
    *,
    pods: PodInformer,
    pods_name: str,
    settings: ListenerSettings,
    policy: RestartPolicy | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    workers: int | None = None,
) -> ListenerReconciler:
    """Build the listener reconciler and register it on ``manager``, owning the Pods of
    ``pods`` (the listener Pod informer, registered as ``pods_name``). Writes are
    fenced by the manager's leadership."""
    api_reader = ApiReader(manager.api_reader)
    resources = KubeListenerResources(api_client, pods=pods.store, fence=manager.is_leading)
    reconciler = ListenerReconciler(
        listeners=resources,
        objects=resources,
        inputs=ScaleSetInputs(
            get_secret=api_reader.get_secret,
            get_configmap=api_reader.get_configmap,
        ),
        events=manager.events,
        settings=settings,
        policy=policy,
        clock=clock,
    )
    manager.add_controller(
        CONTROLLER_NAME,
        reconciler,
        workers=workers,
        for_=LISTENERS,
        owns=[pods_name],
        predicates={LISTENERS.plural: AlwaysPass(), pods_name: AlwaysPass()},
    )
    return reconciler
