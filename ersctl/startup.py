"""What ``ersctl reconcile`` checks before anything starts, and what each answer means.

1. The API server answers and serves ``actions.github.com/v1alpha1`` (else exit 1,
   naming the command that installs the CRDs).
2. The served CRDs keep what the controllers write (``ersctl.kube.crdcheck``):

   - the guard's fields on sets and runners: a CRD that drops one (ARC 0.14's) refuses
     the start, exit 2, naming each field: under it the guard would be off without a
     word. ARC 0.15's CRDs carry them;
   - the AutoscalingRunnerSet and AutoscalingListener CRDs, with the ARS controller
     on: not installed, or without what that controller reads, refuses the start
     (their informers would never sync, and nothing would say why);
   - with the listener controller on, the AutoscalingListener CRD must be installed;
     where it drops the restart backoff's status fields (ARC's, whose status is empty)
     one WARNING says so: an exited listener Pod then waits the first step (5 s) each
     time instead of a growing backoff;
   - where the ARS CRD drops some of the status the controller shows (ARC 0.14's has no
     ``phase``, 0.15's no ``state``, neither our ``message``), one WARNING names them.

   Where the controller may not read CRDs at all (ARC's Helm chart grants no
   ``customresourcedefinitions`` get), one WARNING says what could not be checked and
   the start goes on: a guard write the served CRD then drops stops its set at run
   time with a ``GuardFieldsPruned`` Event (``ersctl.ephemeralrunnerset.markers``).

An answered transient error (5xx, 429) is asked again a few times first
(``ersctl.kube.connect.check_at_start_up``).
"""

from __future__ import annotations

import logging

from ersctl.api import (
    AL_CRD,
    AL_REQUIRED_FIELDS,
    ARS_CRD,
    ARS_REQUIRED_FIELDS,
    ARS_STATUS_FIELDS,
    GROUP,
    GUARD_FIELDS,
    INSTALL_CRDS_COMMAND,
    LISTENER_FIELDS,
    VERSION,
)
from ersctl.arcclient.errors import PrunedFieldsError
from ersctl.kube.client import ApiClient
from ersctl.kube.connect import check_api_group, check_at_start_up
from ersctl.kube.crdcheck import ServedCrds, read_served_crds
from ersctl.kube.errors import ForbiddenError, NotFoundError
from ersctl.platform.errors import ConfigError, Failure

log = logging.getLogger("ersctl")

ARS_OPTION = "--autoscaling-runner-set-controller"


def check_api(api: ApiClient, *, autoscaling: bool, listener_controller: bool) -> None:
    """The checks of the module docstring, tried again after a transient answer."""
    check_at_start_up(
        lambda: _check_once(api, autoscaling=autoscaling, listener_controller=listener_controller),
        logger=log,
    )


def _check_once(api: ApiClient, *, autoscaling: bool, listener_controller: bool) -> None:
    try:
        check_api_group(api, group=GROUP, version=VERSION)
    except NotFoundError:
        raise Failure(
            f"the API server does not serve {GROUP}/{VERSION}: install the CRDs first "
            f"({INSTALL_CRDS_COMMAND})"
        ) from None
    fields = dict(GUARD_FIELDS)
    if listener_controller:
        fields |= LISTENER_FIELDS
    if autoscaling:
        fields[ARS_CRD] = (*ARS_REQUIRED_FIELDS, *ARS_STATUS_FIELDS)
        fields[AL_CRD] = (*fields.get(AL_CRD, ()), *AL_REQUIRED_FIELDS)
    try:
        served = read_served_crds(api, fields, version=VERSION)
    except ForbiddenError as exc:
        log.warning(
            "cannot read the CRDs (%s): not checked whether they keep the guard's fields; "
            "a guard write the served CRD drops stops its set with a GuardFieldsPruned Event",
            exc.reason or "forbidden",
        )
        return
    _judge(served, autoscaling=autoscaling, listener_controller=listener_controller)


def _judge(served: ServedCrds, *, autoscaling: bool, listener_controller: bool) -> None:
    guard_dropped = served.dropped_by(list(GUARD_FIELDS))
    if guard_dropped:
        raise PrunedFieldsError(guard_dropped)
    if listener_controller and AL_CRD in served.missing:
        raise PrunedFieldsError(LISTENER_FIELDS)
    if autoscaling:
        _judge_autoscaling(served)
    backoff = [f for f in LISTENER_FIELDS[AL_CRD] if f in served.dropped.get(AL_CRD, ())]
    if listener_controller and backoff:
        log.warning(
            "the served %s drops %s (ARC's CRD): an exited listener pod is restarted after "
            "5 s each time, without the growing backoff; install this project's CRDs to "
            "keep it (%s)",
            AL_CRD,
            ", ".join(backoff),
            INSTALL_CRDS_COMMAND,
        )


def _judge_autoscaling(served: ServedCrds) -> None:
    lacking = [
        f"{crd} is not installed or lacks {', '.join(lost)}"
        for crd, required in ((ARS_CRD, ARS_REQUIRED_FIELDS), (AL_CRD, AL_REQUIRED_FIELDS))
        if (lost := [f for f in required if f in served.dropped.get(crd, ())])
    ]
    if lacking:
        raise ConfigError(
            ARS_OPTION,
            f"{'; '.join(lacking)}: install the CRDs ({INSTALL_CRDS_COMMAND}) or pass "
            "--no-autoscaling-runner-set-controller",
        )
    status = [f for f in ARS_STATUS_FIELDS if f in served.dropped.get(ARS_CRD, ())]
    if status:
        log.warning(
            "the served %s drops %s: AutoscalingRunnerSets show less of their state",
            ARS_CRD,
            ", ".join(status),
        )
