"""The simulator's JSON control API under ``/_sim`` (documented in ``ghalistener.testing.github``).

``dispatch`` is the one entry point of both adapters: ``/_sim/...`` requests are
answered here, everything else by ``ghalistener.testing.service.handle``. Faults never
apply to the control API.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ghalistener.testing.core import SimError
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.service import ENDPOINTS, SimRequest, SimResponse, handle

PREFIX = "/_sim"

Control = Callable[[GitHubSimulator, dict[str, Any], dict[str, str], SimRequest], Any]
_CONTROLS: list[tuple[str, re.Pattern[str], Control]] = []


def control(method: str, pattern: str) -> Callable[[Control], Control]:
    def register(func: Control) -> Control:
        _CONTROLS.append((method, re.compile(f"^{PREFIX}{pattern}$"), func))
        return func

    return register


def dispatch(simulator: GitHubSimulator, request: SimRequest) -> SimResponse:
    """Answer any request to the simulator (control API or simulated GitHub)."""
    if not request.path.startswith(PREFIX + "/"):
        return handle(simulator, request)
    for method, pattern, func in _CONTROLS:
        match = pattern.match(request.path.rstrip("/"))
        if match and method == request.method:
            try:
                body = request.json() or {}
                if not isinstance(body, dict):
                    raise SimError(400, "control requests take a JSON object")
                result = func(simulator, body, match.groupdict(), request)
            except SimError as exc:
                return SimResponse.of(exc.status, {"error": exc.message})
            except (KeyError, TypeError, ValueError) as exc:
                return SimResponse.of(400, {"error": f"bad control request: {exc!r}"})
            return SimResponse.of(200, result)
    return SimResponse.of(404, {"error": f"no control endpoint {request.method} {request.path}"})


def _id(params: dict[str, str]) -> int:
    return int(params["id"])


@control("GET", "/health")
def _health(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    return {"ok": True, "endpoints": list(ENDPOINTS)}


@control("GET", "/state")
def _state(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    return sim.state()


@control("GET", "/events")
def _events(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    return {"events": sim.events_since(int(r.query.get("since", "0")))}


@control("POST", "/scalesets")
def _create_scale_set(
    sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest
) -> Any:
    return sim.create_scale_set(
        str(body["name"]),
        runner_group_id=int(body.get("runnerGroupId", 1)),
        labels=[str(label) for label in body.get("labels", [])],
    )


@control("GET", r"/scalesets/(?P<id>\d+)/statistics")
def _statistics(
    sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest
) -> Any:
    return sim.statistics_wire(_id(p))


@control("POST", "/jobs")
def _enqueue(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    count = int(body.get("count", 1))
    if not 1 <= count <= 10_000:
        raise SimError(400, "count must be between 1 and 10000")
    options: dict[str, Any] = {}
    for key, name in (
        ("repository", "repository"),
        ("displayName", "display_name"),
        ("workflowRef", "workflow_ref"),
    ):
        if key in body:
            options[name] = str(body[key])
    if "labels" in body:
        options["labels"] = [str(label) for label in body["labels"]]
    ids = [sim.enqueue_job(int(body["scaleSetId"]), **options) for _ in range(count)]
    return {"requestIds": ids}


@control("POST", r"/jobs/(?P<id>\d+)/complete")
def _complete_job(
    sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest
) -> Any:
    return {"requestId": sim.complete_job(_id(p), result=str(body.get("result", "succeeded")))}


@control("POST", r"/jobs/(?P<id>\d+)/cancel")
def _cancel_job(
    sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest
) -> Any:
    sim.cancel_job(_id(p), requeue=bool(body.get("requeue", True)))
    return {"requestId": _id(p)}


@control("POST", "/runners/connect")
def _connect(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    return sim.connect_runner(str(body["jitConfig"]))


@control("POST", r"/runners/(?P<id>\d+)/disconnect")
def _disconnect(
    sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest
) -> Any:
    sim.disconnect_runner(_id(p), graceful=bool(body.get("graceful", False)))
    return {"runnerId": _id(p)}


@control("POST", r"/runners/(?P<id>\d+)/start")
def _start(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    request_id = body.get("requestId")
    return {"requestId": sim.start_job(_id(p), None if request_id is None else int(request_id))}


@control("POST", r"/runners/(?P<id>\d+)/complete")
def _finish(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    return {
        "requestId": sim.complete_job(runner_id=_id(p), result=str(body.get("result", "succeeded")))
    }


@control("POST", "/tokens/expire")
def _expire(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    sim.expire_tokens(str(body.get("kind", "all")))
    return {"expired": body.get("kind", "all")}


@control("POST", "/faults")
def _fault(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    endpoint = str(body.get("endpoint", "*"))
    if endpoint != "*" and endpoint not in ENDPOINTS:
        raise SimError(400, f"unknown endpoint {endpoint!r}; one of {', '.join(ENDPOINTS)}")
    status = body.get("status")
    sim.inject_fault(
        endpoint=endpoint,
        status=None if status is None else int(status),
        body=None if body.get("body") is None else str(body["body"]),
        bom=bool(body.get("bom", False)),
        latency=float(body.get("latency", 0.0)),
        times=int(body.get("times", 1)),
    )
    return {"faults": sim.faults.describe()}


@control("DELETE", "/faults")
def _clear_faults(
    sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest
) -> Any:
    sim.faults.clear()
    return {"faults": []}


_SECONDS_SETTINGS: dict[str, str] = {
    "holdSeconds": "hold_seconds",
    "adminTokenTtl": "admin_token_ttl",
    "sessionIdleTimeout": "session_idle_timeout",  # null: never
    "runnerOfflineDelay": "runner_offline_delay",
}
"""The settings given in seconds: wire key -> the simulator's attribute."""


def _seconds(key: str, value: Any) -> float | None:
    """``value`` as seconds (a number, 0 or more; null only for the session timeout),
    else a 400 naming ``key``."""
    if value is None and key == "sessionIdleTimeout":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise SimError(400, f"{key} must be a number of seconds, 0 or more (got {value!r})")
    return float(value)


@control("PATCH", "/settings")
def _settings(sim: GitHubSimulator, body: dict[str, Any], p: dict[str, str], r: SimRequest) -> Any:
    # Every value is checked before any is applied: a refused request changes nothing.
    seconds = {key: _seconds(key, body[key]) for key in _SECONDS_SETTINGS if key in body}
    for key, value in seconds.items():
        setattr(sim, _SECONDS_SETTINGS[key], value)
    if "ephemeral" in body:
        sim.ephemeral = bool(body["ephemeral"])
    return {
        "ephemeral": sim.ephemeral,
        **{key: getattr(sim, attribute) for key, attribute in _SECONDS_SETTINGS.items()},
    }
