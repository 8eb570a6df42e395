"""ARC's cleanup protection of what an AutoscalingRunnerSet uses: the finalizer
``actions.github.com/cleanup-protection`` on its credentials Secret while the ARS uses
it (so deleting the Secret cannot strand the teardown, which needs it to delete the
scale set on GitHub), and its release, at the end of the teardown, from every object
the ARS's annotations name (from ARC's Helm chart also its ServiceAccounts, Roles and
RoleBindings). Without the release, ``helm uninstall`` or the namespace's deletion
hangs on those objects forever. Pure: the reads and writes go through the reconciler's
``Objects`` port.
"""

from __future__ import annotations

from ersctl.api import (
    CLEANUP_PROTECTED,
    CLEANUP_PROTECTED_SECRET,
    CLEANUP_PROTECTION_FINALIZER,
    CLEANUP_SECRET_ANNOTATION,
    AutoscalingRunnerSet,
    CleanupProtected,
)
from ersctl.autoscalingrunnerset.ports import Objects
from ersctl.kube.errors import ForbiddenError, NotFoundError
from ersctl.scaleset.ports import CredentialsFieldError


def protect_secret(objects: Objects, ars: AutoscalingRunnerSet) -> bool:
    """The protection on the credentials Secret, moved when the ARS names another one.
    True when the ARS was patched (its annotation names the Secret); raises
    ``CredentialsFieldError`` when the Secret does not exist."""
    secret = ars.github_config_secret
    protected = ars.annotations.get(CLEANUP_SECRET_ANNOTATION)
    if protected == secret:
        return False
    if protected:
        release(objects, CLEANUP_PROTECTED_SECRET, ars.namespace, protected)
    live = objects.get_builtin("secrets", ars.namespace, secret)
    if live is None:
        raise CredentialsFieldError("spec.githubConfigSecret", f"Secret {secret} not found")
    finalizers = (live.get("metadata") or {}).get("finalizers") or []
    if CLEANUP_PROTECTION_FINALIZER not in finalizers:
        objects.patch_builtin(
            "secrets",
            ars.namespace,
            secret,
            {
                "metadata": {
                    "finalizers": [*finalizers, CLEANUP_PROTECTION_FINALIZER],
                    "resourceVersion": (live.get("metadata") or {}).get("resourceVersion"),
                }
            },
        )
    objects.patch_ars(ars, {"metadata": {"annotations": {CLEANUP_SECRET_ANNOTATION: secret}}})
    return True


def release_all(objects: Objects, ars: AutoscalingRunnerSet) -> None:
    """Release every object the ARS's cleanup annotations name, in ARC's order."""
    for target in CLEANUP_PROTECTED:
        named = ars.annotations.get(target.annotation)
        if named:
            release(objects, target, ars.namespace, named)


def release(objects: Objects, target: CleanupProtected, namespace: str, name: str) -> None:
    """Take ARC's cleanup-protection finalizer, and no other, off one object an ARS
    named. Gone already is fine; any other failure raises (the ARS keeps its
    finalizer and the teardown is retried)."""
    try:
        live = objects.get_builtin(target.plural, namespace, name)
    except ForbiddenError:
        if not target.forbidden_is_gone:
            raise
        return
    meta = (live or {}).get("metadata") or {}
    finalizers = meta.get("finalizers") or []
    if CLEANUP_PROTECTION_FINALIZER not in finalizers:
        return
    kept = [f for f in finalizers if f != CLEANUP_PROTECTION_FINALIZER]
    try:
        # Locked by resourceVersion: a finalizer another controller added meanwhile
        # is never dropped by a merge patch written from an older list.
        objects.patch_builtin(
            target.plural,
            namespace,
            name,
            {"metadata": {"finalizers": kept, "resourceVersion": meta.get("resourceVersion")}},
        )
    except NotFoundError:
        return  # deleted between the read and the patch
