"""A small stateful scale-set service on respx, for driving the real listener.

It speaks the wire protocol the real ``ActionsClient`` speaks (auth chain, sessions,
long poll, ack, acquire) and follows a script of queue steps: a message (delivered
until acked, so an unacked message comes back to the next session) or a timeout (one
202). Faults are armed one at a time: a 409 on session create, a 401 on the next poll
(expired queue token), a 404 on the next poll or ack (session dropped), a 404 on the
next ack or acquisition that leaves the session in place (``spurious_404_on``). With
``exclusive``, a create answers 409 while another session exists, as the service does.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
import respx

CONFIG_URL = "https://github.com/octo"
API = "https://api.github.com"
SERVICE = "https://pipelines.actions.test/t1"
BROKER = "https://broker.actions.test/t1"
PAT = "ghp_listenerTESTtoken0123456789"
SCALE_SET_ID = 7


@dataclass(frozen=True)
class Timeout:
    """One long poll that ends without a message (HTTP 202)."""


TIMEOUT = Timeout()


def job(kind: str, request_id: int, **extra: Any) -> dict[str, Any]:
    """A job message on the wire (camelCase), owner ``octo``, repository ``app``."""
    return {
        "messageType": kind,
        "runnerRequestId": request_id,
        "repositoryName": "app",
        "ownerName": "octo",
        "jobId": f"job-{request_id}",
        "jobWorkflowRef": "octo/app/.github/workflows/ci.yml@refs/heads/main",
        "jobDisplayName": f"build {request_id}",
        "workflowRunId": 1000 + request_id,
        "eventName": "push",
        **extra,
    }


@dataclass(frozen=True)
class Message:
    message_id: int
    assigned: int
    jobs: tuple[dict[str, Any], ...] = ()

    def wire(self) -> dict[str, Any]:
        return {
            "messageId": self.message_id,
            "messageType": "RunnerScaleSetJobMessages",
            "body": json.dumps(list(self.jobs)),
            "statistics": {"totalAssignedJobs": self.assigned, "totalAvailableJobs": 0},
        }


Step = Message | Timeout

_SESSIONS = re.compile(
    rf"/_apis/runtime/runnerscalesets/{SCALE_SET_ID}/sessions(?:/(?P<sid>[^/?]+))?$"
)
_ACQUIRE = re.compile(rf"/_apis/runtime/runnerscalesets/{SCALE_SET_ID}/acquirejobs$")
_QUEUE = re.compile(r"/t1/(?P<sid>[^/]+)/message(?:/(?P<mid>\d+))?$")


@dataclass
class ScaleSetService:
    """The service's state; ``journal`` records what the listener did, in order."""

    steps: list[Step] = field(default_factory=list)
    assigned_at_open: int = 0
    conflicts: int = 0
    expire_next_poll: bool = False
    drop_on_next: str | None = None  # "poll" or "ack"
    spurious_404_on: str | None = None  # "ack" or "acquire": 404, the session stays
    exclusive: bool = False
    on_exhausted: Callable[[], None] | None = None
    on_ack: Callable[[int], None] | None = None
    journal: list[tuple[Any, ...]] = field(default_factory=list)
    sessions: dict[str, str] = field(default_factory=dict)  # id -> queue token
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _idle: threading.Event = field(default_factory=threading.Event)

    def mount(self, router: respx.MockRouter) -> None:
        router.post(f"{API}/orgs/octo/actions/runners/registration-token").respond(
            201, json={"token": "AREGTOKEN123456", "expires_at": "2099-01-01T00:00:00Z"}
        )
        admin = jwt.encode({"exp": 4_000_000_000}, "k" * 32, algorithm="HS256")
        router.post(f"{API}/actions/runner-registration").respond(
            200, json={"url": f"{SERVICE}/", "token": admin}
        )
        router.route(url__startswith=SERVICE).mock(side_effect=self._service)
        router.route(url__startswith=BROKER).mock(side_effect=self._broker)

    def release(self) -> None:
        """End a long poll that is waiting because the script ran out."""
        self._idle.set()

    def entries(self, kind: str) -> list[tuple[Any, ...]]:
        return [entry for entry in self.journal if entry[0] == kind]

    # --- the actions service ------------------------------------------------------

    def _service(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if match := _SESSIONS.search(path):
            return self._session_call(request.method, match["sid"])
        if _ACQUIRE.search(path) and request.method == "POST":
            if self._spurious_404("acquire"):
                return httpx.Response(404, json={"message": "not found"})
            ids = json.loads(request.content)
            self.journal.append(("acquire", tuple(ids)))
            return httpx.Response(200, json={"count": len(ids), "value": ids})
        return httpx.Response(404, json={"message": f"no route {path}"})

    def _session_call(self, method: str, sid: str | None) -> httpx.Response:
        with self._lock:
            if method == "POST":
                if self.conflicts > 0 or (self.exclusive and self.sessions):
                    self.conflicts -= 1
                    self.journal.append(("session-conflict",))
                    return httpx.Response(409, json={"message": "session exists"})
                self._count += 1
                sid = f"s{self._count}"
                self.sessions[sid] = f"qtoken-{sid}-0"
                self.journal.append(("session-created", sid))
                return httpx.Response(200, json=self._session_json(sid))
            if sid not in self.sessions:
                return httpx.Response(404, json={"message": "no such session"})
            if method == "PATCH":
                self.sessions[sid] = f"qtoken-{sid}-{len(self.entries('refresh')) + 1}"
                self.journal.append(("refresh", sid))
                return httpx.Response(200, json=self._session_json(sid))
            if method == "DELETE":
                del self.sessions[sid]
                self.journal.append(("session-deleted", sid))
                return httpx.Response(204)
        return httpx.Response(405)

    def _session_json(self, sid: str) -> dict[str, Any]:
        return {
            "sessionId": sid,
            "ownerName": "test-host",
            "runnerScaleSet": {"id": SCALE_SET_ID, "name": "runners"},
            "messageQueueUrl": f"{BROKER}/{sid}/message",
            "messageQueueAccessToken": self.sessions[sid],
            "statistics": {"totalAssignedJobs": self.assigned_at_open},
        }

    # --- the message queue ----------------------------------------------------------

    def _broker(self, request: httpx.Request) -> httpx.Response:
        match = _QUEUE.search(request.url.path)
        if match is None:
            return httpx.Response(404)
        sid = match["sid"]
        if request.method == "DELETE":
            return self._ack(sid, int(match["mid"]), request)
        return self._poll(sid, request)

    def _authorized(self, sid: str, request: httpx.Request) -> httpx.Response | None:
        if sid not in self.sessions:
            return httpx.Response(404, json={"message": "session not found"})
        if request.headers.get("Authorization") != f"Bearer {self.sessions[sid]}":
            return httpx.Response(401, json={"message": "token expired"})
        return None

    def _poll(self, sid: str, request: httpx.Request) -> httpx.Response:
        with self._lock:
            if self.drop_on_next == "poll":
                self.drop_on_next = None
                self.sessions.pop(sid, None)
            if self.expire_next_poll and sid in self.sessions:
                self.expire_next_poll = False
                self.sessions[sid] += "-expired"
            if (denied := self._authorized(sid, request)) is not None:
                self.journal.append(("poll-denied", sid, denied.status_code))
                return denied
            last = int(request.url.params.get("lastMessageId", "0"))
            self.journal.append(("poll", sid, last))
            step = self.steps[0] if self.steps else None
            if isinstance(step, Timeout):
                self.steps.pop(0)
                return httpx.Response(202)
            if isinstance(step, Message):
                self.journal.append(("deliver", sid, step.message_id))
                return httpx.Response(200, json=step.wire())
        if self.on_exhausted is not None:
            self.on_exhausted()
        self._idle.wait(10)
        return httpx.Response(202)

    def _ack(self, sid: str, message_id: int, request: httpx.Request) -> httpx.Response:
        with self._lock:
            if self.drop_on_next == "ack":
                self.drop_on_next = None
                self.sessions.pop(sid, None)
            if (denied := self._authorized(sid, request)) is not None:
                return denied
            if self._spurious_404("ack"):
                return httpx.Response(404, json={"message": "not found"})
            if self.on_ack is not None:
                self.on_ack(message_id)
            self.journal.append(("ack", sid, message_id))
            self.steps = [
                s for s in self.steps if not (isinstance(s, Message) and s.message_id == message_id)
            ]
        return httpx.Response(204)

    def _spurious_404(self, where: str) -> bool:
        if self.spurious_404_on != where:
            return False
        self.spurious_404_on = None
        self.journal.append(("spurious-404", where))
        return True
