"""API errors as ``metav1.Status`` documents.

Every failure the emulator reports, over HTTP or through the Python API, is a
:class:`StatusError` carrying the HTTP code, the machine-readable ``reason`` and the
message the real kube-apiserver would write (same wording, so client code that matches
on messages behaves the same against both).
"""

from __future__ import annotations

from typing import Any

from ersctl.testing.apiserver.resources import ResourceType

JsonObject = dict[str, Any]


class StatusError(Exception):
    """A request failed; ``status`` is the ``metav1.Status`` body sent to the client."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: JsonObject | None = None,
        plain: bool = False,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.plain = plain
        """Answered as plain text (``message``), not as a Status: what the real server's
        mux sends for a path no API claims."""

    @property
    def status(self) -> JsonObject:
        body: JsonObject = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        }
        if self.reason:  # metav1.Status omits an unknown (empty) reason
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(rt: ResourceType, name: str) -> JsonObject:
    # The real server puts the plural resource name in "kind" (sic).
    details: JsonObject = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    return details


def not_found(rt: ResourceType, name: str) -> StatusError:
    return StatusError(
        404, "NotFound", f'{rt.qualified} "{name}" not found', details=_details(rt, name)
    )


def namespace_not_found(namespace: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'namespaces "{namespace}" not found',
        details={"name": namespace, "kind": "namespaces"},
    )


def already_exists(rt: ResourceType, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{rt.qualified} "{name}" already exists',
        details=_details(rt, name),
    )


def conflict(rt: ResourceType, name: str, why: str | None = None) -> StatusError:
    why = why or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.qualified} "{name}": {why}',
        details=_details(rt, name),
    )


def invalid(rt: ResourceType, name: str, field: str, kind: str, problem: str) -> StatusError:
    """422 Invalid for one field; ``kind`` is the cause type, e.g. ``FieldValueRequired``."""
    group_kind = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    message = f"{field}: {problem}"
    details = _details(rt, name)
    details["kind"] = rt.kind
    details["causes"] = [{"reason": kind, "message": problem, "field": field}]
    return StatusError(
        422, "Invalid", f'{group_kind} "{name}" is invalid: {message}', details=details
    )


def invalid_fields(
    rt: ResourceType, name: str, violations: list[tuple[str, str, str]]
) -> StatusError:
    """422 Invalid listing several fields: (field, cause type, problem) each."""
    group_kind = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    parts = [f"{field}: {problem}" for field, _, problem in violations]
    summary = parts[0] if len(parts) == 1 else f"[{', '.join(parts)}]"
    details = _details(rt, name)
    details["kind"] = rt.kind
    details["causes"] = [
        {"reason": kind, "message": problem, "field": field} for field, kind, problem in violations
    ]
    return StatusError(
        422, "Invalid", f'{group_kind} "{name}" is invalid: {summary}', details=details
    )


def missing_kind(rt: ResourceType, raw: bytes) -> StatusError:
    """What the apiextensions server answers for a custom object whose body has no
    ``kind``: it decodes bodies as unstructured JSON, which cannot default the kind from
    the URL as the built-in types' decoder does."""
    text = raw.decode("utf-8", "replace")
    summary = text if len(text) <= 30 else text[:30] + " ..."
    return bad_request(
        f"the object provided is unrecognized (must be of type {rt.kind}): "
        f"Object 'Kind' is missing in '{text}' ({summary})"
    )


def resource_version_on_create() -> StatusError:
    """The storage layer's refusal of a create that carries a resourceVersion: a plain
    error there, so the server answers 500 with no reason (ErrorToAPIStatus)."""
    return StatusError(500, "", "resourceVersion should not be set on objects to be created")


def apply_conflict(conflicts: list[tuple[str, str]]) -> StatusError:
    """409 for a server-side apply that would change fields other managers own:
    ``conflicts`` is (manager as printed, field path) each, worded as the real server's
    NewConflictError."""
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {manager}", "field": path}
        for manager, path in conflicts
    ]
    if len(conflicts) == 1:
        manager, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {manager}: {path}"
    else:
        lines = []
        for manager in sorted({m for m, _ in conflicts}):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {path}" for m, path in conflicts if m == manager)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, details={"causes": causes})


def invalid_patch_options(field: str, kind: str, problem: str) -> StatusError:
    """422 for a patch request's options (as ValidatePatchOptions refuses them)."""
    return StatusError(
        422,
        "Invalid",
        f'PatchOptions.meta.k8s.io "" is invalid: {field}: {problem}',
        details={
            "group": "meta.k8s.io",
            "kind": "PatchOptions",
            "causes": [{"reason": kind, "message": problem, "field": field}],
        },
    )


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def unauthorized() -> StatusError:
    """A request without credentials the server accepts."""
    return StatusError(401, "Unauthorized", "Unauthorized")


def forbidden(message: str) -> StatusError:
    return StatusError(403, "Forbidden", message)


def resource_not_found() -> StatusError:
    """A path under an API group the server has, but no route of it: a Status (the
    REST framework's answer)."""
    return StatusError(404, "NotFound", "the server could not find the requested resource")


def page_not_found() -> StatusError:
    """A path no API claims: an unknown group, a custom resource group's unknown
    resource, anything outside /api and /apis. The real server's mux answers these
    with Go's plain-text 404, not a Status."""
    return StatusError(404, "NotFound", "404 page not found\n", plain=True)


def method_not_allowed() -> StatusError:
    return StatusError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


def unsupported_media_type(
    content_type: str, accepted: list[str], *, detail: str | None = None
) -> StatusError:
    message = (
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted)
    )
    if detail:
        message += f" ({content_type}: {detail})"
    return StatusError(415, "UnsupportedMediaType", message)


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def too_large_resource_version(message: str) -> StatusError:
    """504 for a read of a resourceVersion the server has not reached (NewTimeoutError:
    its message starts with "Timeout: ")."""
    return StatusError(
        504,
        "Timeout",
        f"Timeout: {message}",
        details={
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def injected(code: int) -> StatusError:
    """The error a test asked for with ``ApiServer.inject_fault``."""
    reason = _REASONS.get(code, "Unknown" if code >= 400 else "")
    return StatusError(code, reason, f"injected fault: HTTP {code}")


def internal(
    message: str = "an error on the server has prevented the request from succeeding",
) -> StatusError:
    return StatusError(500, "InternalError", message)
