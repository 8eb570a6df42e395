"""``ActionsClient``: the runner scale-set service endpoints.

One method per endpoint either program calls (scale sets, runner groups, JIT configs,
runners, message sessions, messages, job acquisition), as ARC's Go client has them.
Each call obtains the admin connection (refreshing the auth chain when its token has
< 60 s left), sends through the one retrying ``HttpSender`` and maps unwanted statuses
to the typed errors of ``ghalistener.actions.errors``. The message-queue calls take the
session explicitly; ``ghalistener.actions.session.MessageSession`` wraps them with
refresh-on-401.

Thread-safety: methods may be called from several threads; the admin connection is
refreshed under a lock.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import httpx

from ersctl.platform.redaction import REDACTOR
from ghalistener.actions.auth import AppCredentials, PatCredentials
from ghalistener.actions.configurl import GitHubConfig, parse_config_url
from ghalistener.actions.connection import AdminConnection, AdminConnector
from ghalistener.actions.errors import (
    MessageParseError,
    MessageQueueTokenExpiredError,
    RequestError,
    RunnerNotFoundError,
    SessionConflictError,
    SessionNotFoundError,
)
from ghalistener.actions.messages import (
    decode_json,
    encode_scale_set,
    parse_acquired_ids,
    parse_jit_config,
    parse_list,
    parse_message,
    parse_runner,
    parse_runner_group,
    parse_scale_set,
    parse_session,
)
from ghalistener.actions.proxy import ProxySettings
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.transport import (
    DEFAULT_TIMEOUT,
    LONG_POLL_TIMEOUT,
    HttpSender,
    error_from_response,
    is_valid_url,
)
from ghalistener.actions.types import (
    JitConfig,
    RunnerGroup,
    RunnerReference,
    RunnerScaleSet,
    RunnerScaleSetMessage,
    RunnerScaleSetSession,
    SystemInfo,
)

API_VERSION = "6.0-preview"
SCALE_SETS = "_apis/runtime/runnerscalesets"
RUNNERS = "_apis/distributedtask/pools/0/agents"
RUNNER_GROUPS = "_apis/runtime/runnergroups/"
MAX_CAPACITY_HEADER = "X-ScaleSetMaxCapacity"

ErrorMap = Mapping[int, type[RequestError]]


class ActionsClient:
    """Client of GitHub's runner scale-set service for one configuration URL.

    ``root_ca`` (PEM) is trusted besides the system's CAs; ``proxy`` routes every request
    (``ghalistener.actions.proxy``) instead of the environment's proxy variables.
    Raises ConfigUrlError for a bad ``config_url`` and RootCaError for a ``root_ca``
    holding no PEM at construction; every call may raise RequestError (or a subclass)
    and MessageParseError. Close it (or use ``with``).
    """

    def __init__(
        self,
        *,
        config_url: str,
        credentials: PatCredentials | AppCredentials,
        root_ca: str | None = None,
        proxy: ProxySettings | None = None,
        system_info: SystemInfo | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config: GitHubConfig = parse_config_url(config_url)
        self.system_info = system_info or SystemInfo()
        self._sender = HttpSender(
            user_agent=self.system_info.user_agent(),
            retry=retry or RetryPolicy(),
            redactor=REDACTOR,
            root_ca=root_ca,
            proxy=proxy,
            transport=transport,
        )
        self._admin = AdminConnector(
            config=self.config, credentials=credentials, sender=self._sender, clock=clock
        )

    def __enter__(self) -> ActionsClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ActionsClient(config_url={self.config.config_url!r})"

    # -- scale sets and runner groups ------------------------------------------------

    def get_runner_scale_set(self, runner_group_id: int, name: str) -> RunnerScaleSet | None:
        """The scale set called ``name`` in the runner group; None when there is none."""
        params = {"runnerGroupId": str(runner_group_id), "name": name}
        response = self._service("GET", SCALE_SETS, params=params)
        found = parse_list(
            self._json(response, "scale set list"), parse_scale_set, what="scale set list"
        )
        if len(found) > 1:
            raise self._error(response, f"{len(found)} runner scale sets are named {name!r}")
        return found[0] if found else None

    def get_runner_scale_set_by_id(self, scale_set_id: int) -> RunnerScaleSet:
        """The scale set with this id (RequestError with status 404 when unknown)."""
        response = self._service("GET", f"{SCALE_SETS}/{scale_set_id}")
        return parse_scale_set(self._json(response, "runner scale set"))

    def create_runner_scale_set(self, scale_set: RunnerScaleSet) -> RunnerScaleSet:
        """Create a scale set (names are unique within a runner group); returns it with its id."""
        response = self._service("POST", SCALE_SETS, json_body=encode_scale_set(scale_set))
        return parse_scale_set(self._json(response, "runner scale set"))

    def update_runner_scale_set(
        self, scale_set_id: int, scale_set: RunnerScaleSet
    ) -> RunnerScaleSet:
        """Replace the settings of a scale set; returns the updated scale set."""
        path = f"{SCALE_SETS}/{scale_set_id}"
        response = self._service("PATCH", path, json_body=encode_scale_set(scale_set))
        return parse_scale_set(self._json(response, "runner scale set"))

    def delete_runner_scale_set(self, scale_set_id: int) -> None:
        """Delete a scale set."""
        self._service("DELETE", f"{SCALE_SETS}/{scale_set_id}", expected=(204, 200))

    def get_runner_group_by_name(self, name: str) -> RunnerGroup | None:
        """The runner group called ``name``; None when there is none."""
        response = self._service("GET", RUNNER_GROUPS, params={"groupName": name})
        found = parse_list(
            self._json(response, "runner groups"), parse_runner_group, what="runner groups"
        )
        if len(found) > 1:
            raise self._error(response, f"{len(found)} runner groups are named {name!r}")
        return found[0] if found else None

    # -- runners ---------------------------------------------------------------------

    def generate_jit_runner_config(
        self, scale_set_id: int, name: str, work_folder: str = "_work"
    ) -> JitConfig:
        """Register a just-in-time runner; RunnerExistsError when the name is taken."""
        path = f"{SCALE_SETS}/{scale_set_id}/generatejitconfig"
        response = self._service("POST", path, json_body={"name": name, "workFolder": work_folder})
        config = parse_jit_config(self._json(response, "JIT config"))
        self._sender.redactor.add([config.encoded_jit_config])
        return config

    def get_runner(self, runner_id: int) -> RunnerReference | None:
        """The runner with this id; None when it is not registered."""
        try:
            response = self._service(
                "GET", f"{RUNNERS}/{runner_id}", errors={404: RunnerNotFoundError}
            )
        except RunnerNotFoundError:
            return None
        return parse_runner(self._json(response, "runner"))

    def get_runner_by_name(self, name: str) -> RunnerReference | None:
        """The runner with this name; None when it is not registered."""
        response = self._service("GET", RUNNERS, params={"agentName": name})
        found = parse_list(self._json(response, "runner list"), parse_runner, what="runner list")
        if len(found) > 1:
            raise self._error(response, f"{len(found)} runners are named {name!r}")
        return found[0] if found else None

    def remove_runner(self, runner_id: int) -> None:
        """Unregister a runner; JobStillRunningError when busy, RunnerNotFoundError when gone."""
        self._service(
            "DELETE",
            f"{RUNNERS}/{runner_id}",
            expected=(204, 200),
            errors={404: RunnerNotFoundError},
        )

    # -- message sessions --------------------------------------------------------------

    def create_message_session(self, scale_set_id: int, owner_name: str) -> RunnerScaleSetSession:
        """Open a session; SessionConflictError when another one holds the scale set."""
        response = self._service(
            "POST",
            f"{SCALE_SETS}/{scale_set_id}/sessions",
            json_body={"ownerName": owner_name},
            errors={409: SessionConflictError},
        )
        return self._session(response)

    def refresh_message_session(self, scale_set_id: int, session_id: str) -> RunnerScaleSetSession:
        """Renew the session's queue token; SessionNotFoundError when the session is gone."""
        response = self._service(
            "PATCH",
            f"{SCALE_SETS}/{scale_set_id}/sessions/{session_id}",
            errors={404: SessionNotFoundError},
        )
        return self._session(response)

    def delete_message_session(self, scale_set_id: int, session_id: str) -> None:
        """Close the session server-side; a session already gone counts as closed."""
        try:
            self._service(
                "DELETE",
                f"{SCALE_SETS}/{scale_set_id}/sessions/{session_id}",
                expected=(204, 200),
                errors={404: SessionNotFoundError},
            )
        except SessionNotFoundError:
            return

    # -- the message queue (authorized by the session's queue token) -----------------

    def get_message(
        self, session: RunnerScaleSetSession, *, last_message_id: int, max_capacity: int
    ) -> RunnerScaleSetMessage | None:
        """Long-poll the queue: a message, or None when the service had none (202).

        Raises MessageQueueTokenExpiredError on 401 and SessionNotFoundError on 404.
        """
        url = _parsed_url(session.message_queue_url)
        if last_message_id > 0:
            url = url.copy_merge_params({"lastMessageId": str(last_message_id)})
        response = self._queue(
            "GET",
            url,
            session,
            headers={
                "Accept": f"application/json; api-version={API_VERSION}",
                MAX_CAPACITY_HEADER: str(max(max_capacity, 0)),
            },
            expected=(200, 202),
            timeout=LONG_POLL_TIMEOUT,
        )
        if response.status_code == 202:
            return None
        return parse_message(self._json(response, "message"))

    def delete_message(self, session: RunnerScaleSetSession, message_id: int) -> None:
        """Acknowledge a message so it is not delivered again."""
        url = _parsed_url(session.message_queue_url)
        url = url.copy_with(path=f"{url.path.rstrip('/')}/{message_id}")
        self._queue("DELETE", url, session, expected=(204, 200))

    def acquire_jobs(
        self, scale_set_id: int, session: RunnerScaleSetSession, request_ids: Sequence[int]
    ) -> list[int]:
        """Acquire jobs for the scale set; returns the request ids actually acquired."""
        connection = self._admin.connection()
        response = self._queue(
            "POST",
            _acquire_jobs_url(connection.url, scale_set_id),
            session,
            json_body=list(request_ids),
        )
        return parse_acquired_ids(self._json(response, "acquired jobs"))

    def close(self) -> None:
        """Release the connection pool."""
        self._sender.close()

    # -- plumbing ----------------------------------------------------------------------

    def _service(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
        expected: Collection[int] = (200,),
        errors: ErrorMap | None = None,
    ) -> httpx.Response:
        """Send an admin-token request; one reconnect if the service rejects the token."""
        query = {"api-version": API_VERSION, **(params or {})}
        connection = self._admin.connection()
        response = self._send_admin(method, path, connection, query, json_body)
        if response.status_code == 401:
            # The admin token died before its exp (revoked, or our clock is off): one
            # fresh chain, then the answer stands.
            self._admin.invalidate(connection)
            response = self._send_admin(method, path, self._admin.connection(), query, json_body)
        return self._check(response, expected, errors)

    def _send_admin(
        self,
        method: str,
        path: str,
        connection: AdminConnection,
        query: Mapping[str, str],
        json_body: Any,
    ) -> httpx.Response:
        return self._sender.send(
            method,
            f"{connection.url.rstrip('/')}/{path}",
            headers={
                "Authorization": f"Bearer {connection.token}",
                "Content-Type": "application/json",
            },
            json_body=json_body,
            params=query,
        )

    def _queue(
        self,
        method: str,
        url: httpx.URL,
        session: RunnerScaleSetSession,
        *,
        headers: Mapping[str, str] | None = None,
        json_body: Any = None,
        expected: Collection[int] = (200,),
        timeout: httpx.Timeout | None = None,
    ) -> httpx.Response:
        """Send a queue-token request; 401 -> MessageQueueTokenExpired, 404 -> SessionNotFound."""
        all_headers = {
            "Authorization": f"Bearer {session.message_queue_access_token}",
            "Content-Type": "application/json",
            **(headers or {}),
        }
        response = self._sender.send(
            method,
            url,
            headers=all_headers,
            json_body=json_body,
            timeout=timeout or DEFAULT_TIMEOUT,
        )
        errors = {401: MessageQueueTokenExpiredError, 404: SessionNotFoundError}
        return self._check(response, expected, errors)

    def _check(
        self, response: httpx.Response, expected: Collection[int], errors: ErrorMap | None
    ) -> httpx.Response:
        if response.status_code in expected:
            return response
        error_type = (errors or {}).get(response.status_code)
        raise error_from_response(response, error_type=error_type, redactor=self._sender.redactor)

    def _error(self, response: httpx.Response, message: str) -> RequestError:
        return error_from_response(response, message=message, redactor=self._sender.redactor)

    def _session(self, response: httpx.Response) -> RunnerScaleSetSession:
        session = parse_session(self._json(response, "message session"))
        self._sender.redactor.add([session.message_queue_access_token])
        if not is_valid_url(session.message_queue_url):
            raise MessageParseError("message session: field 'messageQueueUrl' is not a valid URL")
        return session

    @staticmethod
    def _json(response: httpx.Response, what: str) -> Any:
        return decode_json(response.content, what=what)


# Parsing a URL costs httpx about a third of what sending the request costs; the
# queue's and the acquire URL are the same for a session's every message.
@functools.lru_cache(maxsize=16)
def _parsed_url(url: str) -> httpx.URL:
    return httpx.URL(url)


@functools.lru_cache(maxsize=16)
def _acquire_jobs_url(service_url: str, scale_set_id: int) -> httpx.URL:
    url = httpx.URL(f"{service_url.rstrip('/')}/{SCALE_SETS}/{scale_set_id}/acquirejobs")
    return url.copy_merge_params({"api-version": API_VERSION})
