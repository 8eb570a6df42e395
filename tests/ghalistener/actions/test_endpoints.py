"""Each actions-service endpoint: request shape, success, and error mapping."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import (
    JobStillRunningError,
    MessageParseError,
    RequestError,
    RunnerExistsError,
    RunnerNotFoundError,
    SessionConflictError,
    SessionNotFoundError,
)
from ghalistener.actions.types import Label, RunnerScaleSet, RunnerSetting, ScaleSetId
from tests.ghalistener.actions.conftest import QUEUE_TOKEN, SERVICE, GitHubMock, session_json

SCALE_SET = {
    "id": 7,
    "name": "arc-runners",
    "runnerGroupId": 1,
    "runnerGroupName": "Default",
    "labels": [{"name": "arc-runners", "type": "System"}],
    "runnerSetting": {"ephemeral": True, "disableUpdate": True},
    "statistics": {"totalAssignedJobs": 3},
}


def service_error(status: int, type_name: str, message: str = "nope") -> httpx.Response:
    return httpx.Response(
        status,
        json={"typeName": type_name, "message": message},
        headers={"ActivityId": "act-1", "X-GitHub-Request-Id": "req-1"},
    )


def test_get_scale_set_by_name_sends_group_and_name_and_decodes_the_only_match(
    github: GitHubMock, client: ActionsClient
) -> None:
    route = github.service("GET", "_apis/runtime/runnerscalesets")
    route.return_value = httpx.Response(200, json={"count": 1, "value": [SCALE_SET]})
    found = client.get_runner_scale_set(1, "arc runners")
    assert found is not None
    assert found.runner_setting == RunnerSetting(ephemeral=True, disable_update=True)
    assert found.labels == (Label(name="arc-runners", type="System"),)
    assert found.statistics is not None and found.statistics.total_assigned_jobs == 3
    params = route.calls.last.request.url.params
    assert (params["runnerGroupId"], params["name"]) == ("1", "arc runners")


def test_get_scale_set_by_name_returns_none_when_absent_and_fails_when_ambiguous(
    github: GitHubMock, client: ActionsClient
) -> None:
    route = github.service("GET", "_apis/runtime/runnerscalesets")
    route.side_effect = [
        httpx.Response(200, json={"count": 0, "value": []}),
        httpx.Response(200, json={"count": 2, "value": [SCALE_SET, SCALE_SET]}),
    ]
    assert client.get_runner_scale_set(1, "x") is None
    with pytest.raises(RequestError, match="2 runner scale sets"):
        client.get_runner_scale_set(1, "x")


def test_get_scale_set_by_id_maps_404_to_a_request_error_with_request_ids(
    github: GitHubMock, client: ActionsClient
) -> None:
    github.service("GET", "_apis/runtime/runnerscalesets/9").return_value = service_error(
        404, "RunnerScaleSetNotFoundException", "no such scale set"
    )
    with pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(9)
    error = caught.value
    assert (error.status, error.activity_id, error.github_request_id) == (404, "act-1", "req-1")
    assert error.type_name == "RunnerScaleSetNotFoundException"
    assert "no such scale set" in str(error) and "act-1" in str(error)


def test_create_update_delete_scale_set(github: GitHubMock, client: ActionsClient) -> None:
    create = github.router.post(url__regex=r".*/_apis/runtime/runnerscalesets\?")
    create.return_value = httpx.Response(200, json=SCALE_SET)
    update = github.router.patch(url__regex=r".*/_apis/runtime/runnerscalesets/7\?")
    update.return_value = httpx.Response(200, json={**SCALE_SET, "name": "renamed"})
    delete = github.router.delete(url__regex=r".*/_apis/runtime/runnerscalesets/7\?")
    delete.return_value = httpx.Response(204)
    wanted = RunnerScaleSet(
        id=ScaleSetId(0),
        name="arc-runners",
        runner_group_id=1,
        labels=(Label(name="arc-runners", type=""),),
    )

    assert client.create_runner_scale_set(wanted).id == 7
    sent = json.loads(create.calls.last.request.content)
    assert sent["name"] == "arc-runners" and "id" not in sent
    assert sent["labels"] == [{"name": "arc-runners", "type": "System"}]
    assert client.update_runner_scale_set(7, wanted).name == "renamed"
    client.delete_runner_scale_set(7)
    assert delete.called


def test_runner_group_by_name(github: GitHubMock, client: ActionsClient) -> None:
    route = github.service("GET", "_apis/runtime/runnergroups/")
    group = {"id": 3, "name": "gpu", "size": 2, "isDefaultGroup": False}
    route.side_effect = [
        httpx.Response(200, json={"count": 1, "value": [group]}),
        httpx.Response(200, json={"count": 0, "value": []}),
    ]
    found = client.get_runner_group_by_name("gpu")
    assert found is not None and (found.id, found.name) == (3, "gpu")
    assert route.calls.last.request.url.params["groupName"] == "gpu"
    assert client.get_runner_group_by_name("missing") is None


def test_generate_jit_config_posts_name_and_work_folder(
    github: GitHubMock, client: ActionsClient
) -> None:
    route = github.service("POST", "_apis/runtime/runnerscalesets/7/generatejitconfig")
    route.return_value = httpx.Response(
        200,
        json={
            "runner": {"id": 11, "name": "r-1", "runnerScaleSetId": 7},
            "encodedJITConfig": "eyJJSVQtU0VDUkVUIjoxfQ==",
        },
    )
    config = client.generate_jit_runner_config(7, "r-1")
    assert (config.runner_id, config.runner_name, config.runner_scale_set_id) == (11, "r-1", 7)
    assert config.encoded_jit_config == "eyJJSVQtU0VDUkVUIjoxfQ=="
    assert "eyJJSVQtU0VDUkVUIjoxfQ==" not in repr(config)
    assert json.loads(route.calls.last.request.content) == {"name": "r-1", "workFolder": "_work"}


def test_generate_jit_config_for_a_taken_name_raises_runner_exists(
    github: GitHubMock, client: ActionsClient
) -> None:
    github.service(
        "POST", "_apis/runtime/runnerscalesets/7/generatejitconfig"
    ).return_value = service_error(409, "GitHub.DistributedTask.WebApi.AgentExistsException")
    with pytest.raises(RunnerExistsError):
        client.generate_jit_runner_config(7, "r-1")


def test_get_runner_by_id_and_by_name(github: GitHubMock, client: ActionsClient) -> None:
    runner = {"id": 11, "name": "r-1", "runnerScaleSetId": 7, "busy": True, "status": "online"}
    by_id = github.service("GET", "_apis/distributedtask/pools/0/agents/11")
    by_id.return_value = httpx.Response(200, json=runner)
    github.service("GET", "_apis/distributedtask/pools/0/agents/12").return_value = service_error(
        404, "AgentNotFoundException"
    )
    by_name = github.router.get(url__regex=r".*/agents\?")
    by_name.side_effect = [
        httpx.Response(200, json={"count": 1, "value": [runner]}),
        httpx.Response(200, json={"count": 0, "value": []}),
    ]

    found = client.get_runner(11)
    assert found is not None and found.busy and found.runner_scale_set_id == 7
    assert client.get_runner(12) is None
    named = client.get_runner_by_name("r-1")
    assert named is not None and named.id == 11
    assert by_name.calls.last.request.url.params["agentName"] == "r-1"
    assert client.get_runner_by_name("r-2") is None


@pytest.mark.parametrize(
    ("response", "error"),
    [
        pytest.param(
            service_error(400, "GitHub.DistributedTask.WebApi.JobStillRunningException"),
            JobStillRunningError,
            id="busy runner",
        ),
        pytest.param(
            service_error(404, "GitHub.DistributedTask.WebApi.AgentNotFoundException"),
            RunnerNotFoundError,
            id="unknown runner",
        ),
        pytest.param(httpx.Response(404), RunnerNotFoundError, id="bare 404"),
        pytest.param(
            httpx.Response(400, text="plain words", headers={"Content-Type": "text/plain"}),
            RequestError,
            id="text/plain error used as is",
        ),
    ],
)
def test_remove_runner_maps_service_exceptions(
    github: GitHubMock, client: ActionsClient, response: httpx.Response, error: type[RequestError]
) -> None:
    github.service("DELETE", "_apis/distributedtask/pools/0/agents/11").return_value = response
    with pytest.raises(error) as caught:
        client.remove_runner(11)
    assert type(caught.value) is error
    if response.headers.get("Content-Type") == "text/plain":
        assert "plain words" in str(caught.value)


def test_remove_runner_succeeds_on_204(github: GitHubMock, client: ActionsClient) -> None:
    route = github.service("DELETE", "_apis/distributedtask/pools/0/agents/11")
    route.return_value = httpx.Response(204)
    client.remove_runner(11)
    assert route.called


def test_create_session_sends_the_owner_and_maps_409_to_conflict(
    github: GitHubMock, client: ActionsClient
) -> None:
    route = github.service("POST", "_apis/runtime/runnerscalesets/7/sessions")
    route.side_effect = [
        httpx.Response(200, json=session_json(totalAssignedJobs=2)),
        service_error(409, "TaskAgentSessionConflictException"),
    ]
    session = client.create_message_session(7, "host-1")
    assert json.loads(route.calls.last.request.content) == {"ownerName": "host-1"}
    assert session.message_queue_access_token == QUEUE_TOKEN
    assert session.statistics.total_assigned_jobs == 2
    assert QUEUE_TOKEN not in repr(session)
    with pytest.raises(SessionConflictError) as caught:
        client.create_message_session(7, "host-2")
    assert caught.value.status == 409


def test_refresh_session_and_404(github: GitHubMock, client: ActionsClient) -> None:
    route = github.service("PATCH", "_apis/runtime/runnerscalesets/7/sessions/s-1")
    route.side_effect = [
        httpx.Response(200, json=session_json(token="fresh-token-123")),
        httpx.Response(404),
    ]
    assert client.refresh_message_session(7, "s-1").message_queue_access_token == "fresh-token-123"
    with pytest.raises(SessionNotFoundError):
        client.refresh_message_session(7, "s-1")


def test_delete_session_treats_an_already_gone_session_as_closed(
    github: GitHubMock, client: ActionsClient
) -> None:
    route = github.service("DELETE", "_apis/runtime/runnerscalesets/7/sessions/s-1")
    route.side_effect = [httpx.Response(204), httpx.Response(404), httpx.Response(400)]
    client.delete_message_session(7, "s-1")
    client.delete_message_session(7, "s-1")
    with pytest.raises(RequestError):
        client.delete_message_session(7, "s-1")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        pytest.param(b"<html>oops</html>", "not JSON", id="non-JSON"),
        pytest.param(b"[1, 2]", "expected a JSON object", id="a list"),
        pytest.param(b'{"name": "x"}', "'id' is missing", id="missing id"),
        pytest.param(b'{"id": "7", "name": "x"}', "'id' must be int", id="id of the wrong type"),
    ],
)
def test_a_bad_scale_set_body_raises_a_parse_error_naming_the_problem(
    github: GitHubMock, client: ActionsClient, body: bytes, problem: str
) -> None:
    github.service("GET", "_apis/runtime/runnerscalesets/7").return_value = httpx.Response(
        200, content=body
    )
    with pytest.raises(MessageParseError, match=problem):
        client.get_runner_scale_set_by_id(7)


ENDPOINT_CALLS = [
    pytest.param(lambda c: c.get_runner_scale_set(1, "x"), id="scale set by name"),
    pytest.param(lambda c: c.get_runner_scale_set_by_id(7), id="scale set by id"),
    pytest.param(
        lambda c: c.create_runner_scale_set(RunnerScaleSet(id=ScaleSetId(0), name="x")),
        id="create scale set",
    ),
    pytest.param(
        lambda c: c.update_runner_scale_set(7, RunnerScaleSet(id=ScaleSetId(7), name="x")),
        id="update scale set",
    ),
    pytest.param(lambda c: c.delete_runner_scale_set(7), id="delete scale set"),
    pytest.param(lambda c: c.get_runner_group_by_name("g"), id="runner group"),
    pytest.param(lambda c: c.generate_jit_runner_config(7, "r"), id="JIT config"),
    pytest.param(lambda c: c.get_runner(11), id="runner by id"),
    pytest.param(lambda c: c.get_runner_by_name("r"), id="runner by name"),
    pytest.param(lambda c: c.remove_runner(11), id="remove runner"),
    pytest.param(lambda c: c.create_message_session(7, "h"), id="create session"),
    pytest.param(lambda c: c.refresh_message_session(7, "s-1"), id="refresh session"),
    pytest.param(lambda c: c.delete_message_session(7, "s-1"), id="delete session"),
]


@pytest.mark.parametrize("call", ENDPOINT_CALLS)
def test_every_endpoint_turns_an_unexpected_status_into_a_request_error(
    github: GitHubMock, client: ActionsClient, call: Callable[[ActionsClient], object]
) -> None:
    route = github.router.route(url__startswith=f"{SERVICE}/_apis/")
    route.return_value = service_error(400, "SomeServiceException", "bad input")
    with pytest.raises(RequestError) as caught:
        call(client)
    error = caught.value
    assert type(error) is RequestError
    assert (error.status, error.type_name, error.activity_id) == (
        400,
        "SomeServiceException",
        "act-1",
    )
    assert error.url.startswith(SERVICE) and error.method in {"GET", "POST", "PATCH", "DELETE"}
    assert route.call_count == 1  # a 400 is not retried
