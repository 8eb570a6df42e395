"""The simulator's core state: auth chain, scale sets, runners, statistics, events.

``SimulatorCore`` holds everything but the message sessions and the job lifecycle,
which ``ghalistener.testing.model.GitHubSimulator`` adds on top. All methods are
thread-safe (one condition variable guards all state) and raise ``SimError`` carrying
the HTTP status and service exception name to answer with.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import jwt

from ghalistener.actions.types import Statistics
from ghalistener.testing.faults import FaultBook
from ghalistener.testing.state import Job, JobState, Runner, ScaleSet, Session

DEFAULT_SESSION_IDLE_TIMEOUT = 120.0
"""Seconds a message session may go unused before the service drops it. GitHub does not
publish its value; its clients assume a few minutes (ARC's listener retries a 409 for
4.5 min, the runner for 240 s), and 120 s is inside both windows."""

DEFAULT_RUNNER_OFFLINE_DELAY = 50.0
"""Seconds from a runner process's death (killed, crashed, its node gone) to the service
listing the runner offline. GitHub does not publish when it does; this is modelled on
the 50 s HTTPS long poll it documents a runner holding (a new one opened when one ends):
a dead runner opens none, so the model lists it offline once the poll it held lapses.
One that exits cleanly deletes its session and is offline at once
(:meth:`SimulatorCore.disconnect_runner`)."""


class SimError(Exception):
    """A request the simulated service refuses: answered with ``status`` and a JSON error."""

    def __init__(self, status: int, message: str, type_name: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type_name = type_name


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SimulatorCore:
    """State and operations shared by every part of the simulator (see ``GitHubSimulator``).

    ``hold_seconds`` is how long a long poll waits for a message before answering 202;
    ``ephemeral`` runners are deregistered when their job completes;
    ``session_idle_timeout`` is how long a message session may go unused (no request
    made with it, no long poll held for it) before it is dropped (None: never);
    ``runner_offline_delay`` is how long a runner whose process died is still listed
    online (:data:`DEFAULT_RUNNER_OFFLINE_DELAY`).
    """

    def __init__(
        self,
        *,
        hold_seconds: float = 50.0,
        admin_token_ttl: float = 3600.0,
        ephemeral: bool = True,
        session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
        runner_offline_delay: float = DEFAULT_RUNNER_OFFLINE_DELAY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.hold_seconds = hold_seconds
        self.session_idle_timeout = session_idle_timeout
        self.runner_offline_delay = runner_offline_delay
        self.admin_token_ttl = admin_token_ttl
        self.ephemeral = ephemeral
        self._clock = clock
        self._cond = threading.Condition(threading.RLock())
        self._secret = secrets.token_hex(16)
        self._ids = {"scale_set": 0, "runner": 0, "job": 0, "event": 0}
        self._closed = False
        self.runner_groups: dict[int, str] = {1: "Default"}
        self.scale_sets: dict[int, ScaleSet] = {}
        self.sessions: dict[str, Session] = {}
        self.runners: dict[int, Runner] = {}
        self.jobs: dict[int, Job] = {}
        self.admin_tokens: set[str] = set()
        self.faults = FaultBook()
        self._events: list[dict[str, Any]] = []

    # -- bookkeeping -------------------------------------------------------------------

    def _next(self, kind: str) -> int:
        self._ids[kind] += 1
        return self._ids[kind]

    def _event(self, kind: str, **details: Any) -> None:
        self._events.append(
            {"seq": self._next("event"), "time": self._clock(), "kind": kind, **details}
        )
        self._cond.notify_all()

    @property
    def events(self) -> list[dict[str, Any]]:
        """A copy of the event log (each entry: seq, time, kind, details)."""
        with self._cond:
            return [dict(e) for e in self._events]

    def events_since(self, seq: int) -> list[dict[str, Any]]:
        """Events with a sequence number above ``seq``."""
        with self._cond:
            return [dict(e) for e in self._events if e["seq"] > seq]

    def inject_fault(
        self,
        *,
        endpoint: str = "*",
        status: int | None = None,
        body: bytes | str | None = None,
        bom: bool = False,
        latency: float = 0.0,
        times: int = 1,
    ) -> None:
        """Misbehave on the next ``times`` requests to ``endpoint`` (see ``FaultBook.inject``)."""
        self.faults.inject(
            endpoint=endpoint, status=status, body=body, bom=bom, latency=latency, times=times
        )
        with self._cond:
            self._event("fault.injected", endpoint=endpoint, status=status, times=times)

    def close(self) -> None:
        """Wake every held long poll (they answer 202) and refuse to hold new ones."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- authentication chain ---------------------------------------------------------

    def issue_token(self, purpose: str, *, scope: str = "") -> dict[str, str]:
        """An installation or registration token (any credential is accepted)."""
        with self._cond:
            token = f"sim_{purpose}_{secrets.token_hex(12)}"
            self._event("token.issued", purpose=purpose, scope=scope)
            return {"token": token, "expires_at": _iso(self._clock() + 3600)}

    def admin_connection(
        self, registration_token: str, service_url: str, *, config_url: str = ""
    ) -> dict[str, str]:
        """The actions service URL and a fresh admin JWT (exp = now + admin_token_ttl)."""
        if not registration_token:
            raise SimError(401, "RemoteAuth registration token required")
        with self._cond:
            now = self._clock()
            claims = {
                "iat": int(now),
                "exp": int(now + self.admin_token_ttl),
                "jti": uuid.uuid4().hex,
            }
            token = jwt.encode(claims, self._secret, algorithm="HS256")
            self.admin_tokens.add(token)
            self._event("admin.connected", config_url=config_url)
            return {"url": service_url, "token": token}

    def check_admin_token(self, token: str) -> None:
        """SimError 401 unless ``token`` is a live admin token issued here."""
        with self._cond:
            if token not in self.admin_tokens:
                raise SimError(401, "admin token is not valid (expired or unknown)")
            exp = jwt.decode(
                token, self._secret, algorithms=["HS256"], options={"verify_exp": False}
            )["exp"]
            if exp <= self._clock():
                self.admin_tokens.discard(token)
                raise SimError(401, "admin token expired")

    def expire_tokens(self, kind: str = "all") -> None:
        """Invalidate tokens so the next call using them gets 401: "admin", "queue" or "all"."""
        if kind not in ("admin", "queue", "all"):
            raise SimError(400, f"unknown token kind {kind!r}")
        with self._cond:
            if kind in ("admin", "all"):
                self.admin_tokens.clear()
            if kind in ("queue", "all"):
                for session in self.sessions.values():
                    session.token_valid = False
            self._event("tokens.expired", which=kind)

    # -- scale sets and runner groups -------------------------------------------------

    def create_scale_set(
        self,
        name: str,
        *,
        runner_group_id: int = 1,
        labels: Iterable[str] = (),
        disable_update: bool = False,
    ) -> dict[str, Any]:
        """Create a scale set; returns its wire form. 409 when the name is taken, in
        any runner group: a scale set's name is its ``runs-on`` label, unique in the
        organization (ARC's ARS then fails with the name taken in another group)."""
        with self._cond:
            if any(s.name.lower() == name.lower() for s in self.scale_sets.values()):
                raise SimError(409, f"scale set {name!r} exists", "RunnerScaleSetExistsException")
            if runner_group_id not in self.runner_groups:
                raise SimError(404, f"runner group {runner_group_id} not found")
            scale_set = ScaleSet(
                id=self._next("scale_set"),
                name=name,
                runner_group_id=runner_group_id,
                runner_group_name=self.runner_groups[runner_group_id],
                labels=list(labels) or [name],
                disable_update=disable_update,
                created_on=_iso(self._clock()),
            )
            self.scale_sets[scale_set.id] = scale_set
            self._event("scaleset.created", scale_set_id=scale_set.id, name=name)
            return scale_set.wire(self._stats(scale_set.id))

    def scale_set(self, scale_set_id: int) -> ScaleSet:
        """The scale set, or SimError 404."""
        with self._cond:
            found = self.scale_sets.get(scale_set_id)
            if found is None:
                raise SimError(
                    404,
                    f"runner scale set {scale_set_id} not found",
                    "RunnerScaleSetNotFoundException",
                )
            return found

    def _find_scale_sets(self, runner_group_id: int, name: str) -> list[ScaleSet]:
        return [
            s
            for s in self.scale_sets.values()
            if s.runner_group_id == runner_group_id and s.name == name
        ]

    def find_scale_sets(self, runner_group_id: int, name: str) -> list[dict[str, Any]]:
        """Wire forms of the scale sets called ``name`` in the group (0 or 1)."""
        with self._cond:
            return [s.wire(self._stats(s.id)) for s in self._find_scale_sets(runner_group_id, name)]

    def update_scale_set(self, scale_set_id: int, changes: dict[str, Any]) -> dict[str, Any]:
        """Apply name / runner group / labels / runnerSetting changes."""
        with self._cond:
            scale_set = self.scale_set(scale_set_id)
            scale_set.name = str(changes.get("name") or scale_set.name)
            group = changes.get("runnerGroupId")
            if isinstance(group, int) and group and group != scale_set.runner_group_id:
                if group not in self.runner_groups:
                    raise SimError(404, f"runner group {group} not found")
                scale_set.runner_group_id = group
                scale_set.runner_group_name = self.runner_groups[group]
            if isinstance(changes.get("labels"), list):
                scale_set.labels = [str(label.get("name")) for label in changes["labels"]]
            setting = changes.get("runnerSetting") or {}
            scale_set.disable_update = bool(setting.get("disableUpdate", scale_set.disable_update))
            self._event("scaleset.updated", scale_set_id=scale_set_id)
            return scale_set.wire(self._stats(scale_set_id))

    def delete_scale_set(self, scale_set_id: int) -> None:
        """Delete a scale set with its sessions."""
        with self._cond:
            self.scale_set(scale_set_id)
            del self.scale_sets[scale_set_id]
            for sid in [s.id for s in self.sessions.values() if s.scale_set_id == scale_set_id]:
                del self.sessions[sid]
            self._event("scaleset.deleted", scale_set_id=scale_set_id)

    # -- statistics --------------------------------------------------------------------

    def _stats(self, scale_set_id: int) -> dict[str, int]:
        jobs = [j for j in self.jobs.values() if j.scale_set_id == scale_set_id]
        runners = [r for r in self.runners.values() if r.scale_set_id == scale_set_id]

        def count(*states: JobState) -> int:
            return sum(1 for j in jobs if j.state in states)

        busy = sum(1 for r in runners if r.busy)
        return {
            "totalAvailableJobs": count(JobState.AVAILABLE),
            "totalAcquiredJobs": count(JobState.ACQUIRED),
            "totalAssignedJobs": count(JobState.ASSIGNED, JobState.RUNNING),
            "totalRunningJobs": count(JobState.RUNNING),
            "totalRegisteredRunners": len(runners),
            "totalBusyRunners": busy,
            "totalIdleRunners": len(runners) - busy,
        }

    def statistics_wire(self, scale_set_id: int) -> dict[str, int]:
        """Current statistics of the scale set, in wire form."""
        with self._cond:
            self.scale_set(scale_set_id)
            return self._stats(scale_set_id)

    def statistics(self, scale_set_id: int) -> Statistics:
        """Current statistics of the scale set, computed from the model."""
        wire = self.statistics_wire(scale_set_id)
        return Statistics(
            total_available_jobs=wire["totalAvailableJobs"],
            total_acquired_jobs=wire["totalAcquiredJobs"],
            total_assigned_jobs=wire["totalAssignedJobs"],
            total_running_jobs=wire["totalRunningJobs"],
            total_registered_runners=wire["totalRegisteredRunners"],
            total_busy_runners=wire["totalBusyRunners"],
            total_idle_runners=wire["totalIdleRunners"],
        )

    # -- runners -------------------------------------------------------------------------

    def generate_jit_config(self, scale_set_id: int, name: str) -> dict[str, Any]:
        """Register a runner; 409 AgentExistsException when the name is taken."""
        with self._cond:
            self.scale_set(scale_set_id)
            if any(r.name == name for r in self.runners.values()):
                raise SimError(
                    409,
                    f"runner {name!r} exists",
                    "GitHub.DistributedTask.WebApi.AgentExistsException",
                )
            runner = Runner(
                id=self._next("runner"),
                name=name,
                scale_set_id=scale_set_id,
                jit_secret=secrets.token_hex(16),
            )
            self.runners[runner.id] = runner
            self._event(
                "runner.registered", runner_id=runner.id, name=name, scale_set_id=scale_set_id
            )
            payload = {
                "runnerId": runner.id,
                "runnerName": name,
                "scaleSetId": scale_set_id,
                "secret": runner.jit_secret,
            }
            encoded = base64.b64encode(json.dumps(payload).encode()).decode()
            return {
                "runner": {"id": runner.id, "name": name, "runnerScaleSetId": scale_set_id},
                "encodedJITConfig": encoded,
            }

    def connect_runner(self, encoded_jit_config: str) -> dict[str, Any]:
        """A runner process presents its JIT config and goes online; returns its reference."""
        try:
            payload = json.loads(base64.b64decode(encoded_jit_config))
            runner_id = int(payload["runnerId"])
        except (ValueError, KeyError, TypeError):
            raise SimError(400, "not a JIT config issued by this simulator") from None
        with self._cond:
            runner = self.runners.get(runner_id)
            if runner is None or runner.jit_secret != payload.get("secret"):
                raise SimError(
                    404, "runner of this JIT config is not registered", "AgentNotFoundException"
                )
            runner.online, runner.offline_at = True, None
            self._event("runner.online", runner_id=runner.id)
            return runner.wire()

    def disconnect_runner(self, runner_id: int, *, graceful: bool = False) -> None:
        """The runner's process ended. ``graceful`` (it deleted its session on the way
        out): offline now; else (killed, crashed, its node gone) still listed online
        until its long poll lapses, ``runner_offline_delay`` seconds from now. A new
        process connecting with the runner's JIT config brings it back online."""
        with self._cond:
            runner = self.runner(runner_id)
            if not runner.online:
                return
            at = self._clock() + (0.0 if graceful else self.runner_offline_delay)
            runner.offline_at = at if runner.offline_at is None else min(runner.offline_at, at)
            self._lapse_runners()

    def _lapse_runners(self) -> None:
        """Runners whose process died and whose last long poll lapsed go offline."""
        now = self._clock()
        for runner in self.runners.values():
            if runner.offline_at is not None and runner.offline_at <= now:
                runner.online, runner.offline_at = False, None
                self._event("runner.offline", runner_id=runner.id)

    def runner(self, runner_id: int) -> Runner:
        """The runner, or SimError 404 AgentNotFoundException."""
        with self._cond:
            self._lapse_runners()
            found = self.runners.get(runner_id)
            if found is None:
                raise SimError(
                    404,
                    f"runner {runner_id} not found",
                    "GitHub.DistributedTask.WebApi.AgentNotFoundException",
                )
            return found

    def find_runners(self, name: str | None = None) -> list[dict[str, Any]]:
        """Wire forms of the registered runners (only the one called ``name`` if given)."""
        with self._cond:
            self._lapse_runners()
            return [r.wire() for r in self.runners.values() if name is None or r.name == name]

    def find_runner_groups(self, name: str | None = None) -> list[dict[str, Any]]:
        """Wire forms of the runner groups (only the one called ``name`` if given)."""
        with self._cond:
            return [
                {"id": gid, "name": gname, "size": 0, "isDefaultGroup": gid == 1}
                for gid, gname in self.runner_groups.items()
                if name is None or gname == name
            ]

    def remove_runner(self, runner_id: int) -> None:
        """Deregister an idle runner; a busy one is refused with JobStillRunningException."""
        with self._cond:
            runner = self.runner(runner_id)
            if runner.busy:
                raise SimError(
                    400,
                    f"runner {runner_id} is running job {runner.request_id}",
                    "GitHub.DistributedTask.WebApi.JobStillRunningException",
                )
            del self.runners[runner_id]
            self._event("runner.removed", runner_id=runner_id)
