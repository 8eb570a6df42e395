"""HTTP semantics of the simulated GitHub REST API and scale-set service.

``handle(simulator, request)`` maps one transport-neutral ``SimRequest`` to a
``SimResponse``; the respx adapter and the threaded server both call it, so they
behave identically. Paths (GHES style; the ``/api/v3`` prefix is optional):

- REST: ``POST /api/v3/app/installations/{id}/access_tokens``,
  ``POST /api/v3/{orgs/O | repos/O/R | enterprises/E}/actions/runners/registration-token``,
  ``POST /api/v3/actions/runner-registration`` (``RemoteAuth``; answers the service URL
  ``<base>/_services/actions/`` and an admin JWT). Any credential is accepted here.
- Service (``<base>/_services/actions/...``, admin Bearer token required): the
  endpoints of ``ghalistener.actions.client.ActionsClient``, plus the message queue
  ``.../runnerscalesets/{id}/messages?sessionId=S`` (GET, DELETE ``/{messageId}``),
  authorized by the session's queue token.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ghalistener.testing.core import SimError
from ghalistener.testing.model import GitHubSimulator

SERVICE_PREFIX = "/_services/actions"
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, kw_only=True)
class SimRequest:
    """One request, independent of the transport. ``headers`` keys are lower case."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    base_url: str

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8")) if self.body else None
        except ValueError:
            raise SimError(400, "request body is not JSON") from None

    def bearer(self, scheme: str = "Bearer") -> str:
        value = self.headers.get("authorization", "")
        prefix = f"{scheme} "
        return value[len(prefix) :] if value.startswith(prefix) else ""


@dataclass(frozen=True, kw_only=True)
class SimResponse:
    """One response."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, status: int, payload: Any = None) -> SimResponse:
        body = b"" if payload is None else json.dumps(payload).encode()
        return cls(status=status, body=body, headers={"Content-Type": "application/json"})


Handler = Callable[[GitHubSimulator, SimRequest, dict[str, str]], SimResponse]
_ROUTES: list[tuple[str, re.Pattern[str], str, Handler]] = []


def route(method: str, pattern: str, endpoint: str) -> Callable[[Handler], Handler]:
    """Register a handler; ``endpoint`` is the name faults target."""

    def register(handler: Handler) -> Handler:
        _ROUTES.append((method, re.compile(f"^{pattern}$"), endpoint, handler))
        return handler

    return register


def handle(simulator: GitHubSimulator, request: SimRequest) -> SimResponse:
    """Answer one request (faults applied first), translating SimError to an error body."""
    path = request.path.removeprefix("/api/v3")
    for method, pattern, endpoint, handler in _ROUTES:
        match = pattern.match(path)
        if match and method == request.method:
            return _answer(simulator, request, endpoint, handler, match.groupdict())
    return SimResponse.of(
        404, {"message": f"no simulated endpoint for {request.method} {request.path}"}
    )


def _answer(
    simulator: GitHubSimulator,
    request: SimRequest,
    endpoint: str,
    handler: Handler,
    params: dict[str, str],
) -> SimResponse:
    fault = simulator.faults.take(endpoint)
    if fault and fault.latency:
        time.sleep(fault.latency)
    if fault and fault.status and fault.body is not None:
        # A chosen body with the status: an error page, or a service echoing the request.
        return SimResponse(
            status=fault.status, body=fault.body, headers={"Content-Type": "text/plain"}
        )
    if fault and fault.status:
        return _error(fault.status, "injected fault", "SimulatedFaultException")
    if fault and fault.body is not None:
        return SimResponse(
            status=200, body=fault.body, headers={"Content-Type": "application/json"}
        )
    try:
        response = handler(simulator, request, params)
    except SimError as exc:
        return _error(exc.status, exc.message, exc.type_name)
    if fault and fault.bom:
        return SimResponse(
            status=response.status, body=BOM + response.body, headers=response.headers
        )
    return response


def _error(status: int, message: str, type_name: str) -> SimResponse:
    payload = {"typeName": type_name, "message": message} if type_name else {"message": message}
    response = SimResponse.of(status, payload)
    response.headers["ActivityId"] = str(uuid.uuid4())
    response.headers["X-GitHub-Request-Id"] = uuid.uuid4().hex[:16].upper()
    return response


def _admin(simulator: GitHubSimulator, request: SimRequest) -> None:
    simulator.check_admin_token(request.bearer())


def _int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise SimError(400, f"{what} must be an integer") from None


# -- GitHub REST: the authentication chain -----------------------------------------------

_REG = (
    r"/(?P<scope>orgs/[^/]+|repos/[^/]+/[^/]+|enterprises/[^/]+)/actions/runners/registration-token"
)


@route("POST", r"/app/installations/(?P<installation>\d+)/access_tokens", "installation_token")
def _installation_token(sim: GitHubSimulator, req: SimRequest, _: dict[str, str]) -> SimResponse:
    if not req.bearer():
        raise SimError(401, "a Bearer app JWT is required")
    return SimResponse.of(201, sim.issue_token("installation"))


@route("POST", _REG, "registration_token")
def _registration_token(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    if not req.bearer():
        raise SimError(401, "Bad credentials")
    return SimResponse.of(201, sim.issue_token("registration", scope=p["scope"]))


@route("POST", r"/actions/runner-registration", "admin_connection")
def _admin_connection(sim: GitHubSimulator, req: SimRequest, _: dict[str, str]) -> SimResponse:
    body = req.json()
    if not isinstance(body, dict) or body.get("runner_event") != "register" or not body.get("url"):
        raise SimError(400, "body must be {url, runner_event: register}")
    service_url = f"{req.base_url.rstrip('/')}{SERVICE_PREFIX}/"
    token = req.bearer("RemoteAuth")
    return SimResponse.of(
        200, sim.admin_connection(token, service_url, config_url=str(body["url"]))
    )


# -- the scale-set service ----------------------------------------------------------------

_SETS = SERVICE_PREFIX + r"/_apis/runtime/runnerscalesets"
_ID = r"/(?P<id>\d+)"
_AGENTS = SERVICE_PREFIX + r"/_apis/distributedtask/pools/0/agents"


@route("GET", _SETS, "list_scale_sets")
def _list_scale_sets(sim: GitHubSimulator, req: SimRequest, _: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    group = _int(req.query.get("runnerGroupId", "1"), "runnerGroupId")
    found = sim.find_scale_sets(group, req.query.get("name", ""))
    return SimResponse.of(200, {"count": len(found), "value": found})


@route("POST", _SETS, "create_scale_set")
def _create_scale_set(sim: GitHubSimulator, req: SimRequest, _: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    body = req.json()
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        raise SimError(400, "a scale set needs a name")
    labels = [
        str(label.get("name")) for label in body.get("labels") or [] if isinstance(label, dict)
    ]
    setting = body.get("runnerSetting")
    setting = setting if isinstance(setting, dict) else {}
    created = sim.create_scale_set(
        body["name"],
        runner_group_id=int(body.get("runnerGroupId") or 1),
        labels=labels,
        disable_update=bool(setting.get("disableUpdate", False)),
    )
    return SimResponse.of(200, created)


@route("GET", _SETS + _ID, "get_scale_set")
def _get_scale_set(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    scale_set_id = int(p["id"])
    return SimResponse.of(200, sim.scale_set(scale_set_id).wire(sim.statistics_wire(scale_set_id)))


@route("PATCH", _SETS + _ID, "update_scale_set")
def _update_scale_set(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    body = req.json()
    return SimResponse.of(
        200, sim.update_scale_set(int(p["id"]), body if isinstance(body, dict) else {})
    )


@route("DELETE", _SETS + _ID, "delete_scale_set")
def _delete_scale_set(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    sim.delete_scale_set(int(p["id"]))
    return SimResponse(status=204)


def _session_wire(
    sim: GitHubSimulator, req: SimRequest, session_id: str, scale_set_id: int
) -> dict[str, Any]:
    session = sim.session(scale_set_id, session_id)
    queue = f"{req.base_url.rstrip('/')}{_SETS}/{scale_set_id}/messages?sessionId={session.id}"
    stats = sim.statistics_wire(scale_set_id)
    return {
        "sessionId": session.id,
        "ownerName": session.owner,
        "runnerScaleSet": sim.scale_set(scale_set_id).wire(stats),
        "messageQueueUrl": queue,
        "messageQueueAccessToken": session.queue_token,
        "statistics": stats,
    }


@route("POST", _SETS + _ID + "/sessions", "create_session")
def _create_session(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    body = req.json()
    owner = str(body.get("ownerName", "")) if isinstance(body, dict) else ""
    session = sim.create_session(int(p["id"]), owner)
    return SimResponse.of(200, _session_wire(sim, req, session.id, int(p["id"])))


@route("PATCH", _SETS + _ID + r"/sessions/(?P<session>[^/]+)", "refresh_session")
def _refresh_session(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    sim.refresh_session(int(p["id"]), p["session"])
    return SimResponse.of(200, _session_wire(sim, req, p["session"], int(p["id"])))


@route("DELETE", _SETS + _ID + r"/sessions/(?P<session>[^/]+)", "delete_session")
def _delete_session(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    sim.delete_session(int(p["id"]), p["session"])
    return SimResponse(status=204)


@route("GET", _SETS + _ID + "/messages", "get_message")
def _get_message(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    capacity = req.headers.get("x-scalesetmaxcapacity")
    message = sim.get_message(
        int(p["id"]),
        req.query.get("sessionId", ""),
        req.bearer(),
        last_message_id=_int(req.query.get("lastMessageId", "0"), "lastMessageId"),
        max_capacity=_int(capacity, "X-ScaleSetMaxCapacity") if capacity else None,
    )
    return SimResponse(status=202) if message is None else SimResponse.of(200, message)


@route("DELETE", _SETS + _ID + r"/messages/(?P<message>\d+)", "delete_message")
def _delete_message(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    sim.delete_message(
        int(p["id"]), req.query.get("sessionId", ""), req.bearer(), int(p["message"])
    )
    return SimResponse(status=204)


@route("POST", _SETS + _ID + "/acquirejobs", "acquire_jobs")
def _acquire_jobs(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    ids = req.json()
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise SimError(400, "body must be a list of request ids")
    acquired = sim.acquire_jobs(int(p["id"]), req.bearer(), ids)
    return SimResponse.of(200, {"count": len(acquired), "value": acquired})


@route("POST", _SETS + _ID + "/generatejitconfig", "generate_jit_config")
def _generate_jit_config(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    body = req.json()
    if not isinstance(body, dict) or not isinstance(body.get("name"), str) or not body["name"]:
        raise SimError(400, "a runner needs a name")
    return SimResponse.of(200, sim.generate_jit_config(int(p["id"]), body["name"]))


@route("GET", SERVICE_PREFIX + r"/_apis/runtime/runnergroups/?", "runner_groups")
def _runner_groups(sim: GitHubSimulator, req: SimRequest, _: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    groups = sim.find_runner_groups(req.query.get("groupName"))
    return SimResponse.of(200, {"count": len(groups), "value": groups})


@route("GET", _AGENTS + _ID, "get_runner")
def _get_runner(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    return SimResponse.of(200, sim.runner(int(p["id"])).wire())


@route("GET", _AGENTS, "list_runners")
def _list_runners(sim: GitHubSimulator, req: SimRequest, _: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    found = sim.find_runners(req.query.get("agentName"))
    return SimResponse.of(200, {"count": len(found), "value": found})


@route("DELETE", _AGENTS + _ID, "remove_runner")
def _remove_runner(sim: GitHubSimulator, req: SimRequest, p: dict[str, str]) -> SimResponse:
    _admin(sim, req)
    sim.remove_runner(int(p["id"]))
    return SimResponse(status=204)


#: Endpoint names a fault may target ("*" targets all).
ENDPOINTS: tuple[str, ...] = tuple(endpoint for _, _, endpoint, _ in _ROUTES)
