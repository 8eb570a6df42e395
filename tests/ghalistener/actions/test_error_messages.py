"""An error from GitHub or the actions service carries the server's own message.

A PAT without the right scope used to print only ``registration token request failed
(..., status 403)``: GitHub's "Resource not accessible by personal access token" was
dropped. ARC's client and actions/scaleset's put the service's message into the error.
"""

from __future__ import annotations

import httpx
import pytest

from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import RequestError, RunnerNotFoundError
from tests.ghalistener.actions.conftest import API, GitHubMock

SCOPE = "Resource not accessible by personal access token"
REGISTRATION = f"POST {API}/orgs/my-org/actions/runners/registration-token"


def test_a_403_from_github_shows_githubs_message(github: GitHubMock, client: ActionsClient) -> None:
    github.registration.return_value = httpx.Response(
        403,
        json={
            "message": SCOPE,
            "documentation_url": "https://docs.github.com/rest/actions/self-hosted-runners",
            "status": "403",
        },
        headers={"X-GitHub-Request-Id": "AB:CD"},
    )
    with pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(7)
    assert str(caught.value) == (
        f"registration token request failed: {SCOPE} "
        f"({REGISTRATION}, status 403, X-GitHub-Request-Id AB:CD)"
    )


@pytest.mark.parametrize(
    ("response", "shown"),
    [
        pytest.param(
            httpx.Response(401, text="Bad credentials", headers={"Content-Type": "text/plain"}),
            "registration token request failed: Bad credentials",
            id="a plain-text body",
        ),
        pytest.param(
            httpx.Response(502, html="<html><body>Bad gateway</body></html>"),
            "registration token request failed",
            id="an HTML page says nothing worth a line",
        ),
        pytest.param(
            httpx.Response(422, json={"errors": ["x"]}),
            "registration token request failed",
            id="JSON without a message",
        ),
    ],
)
def test_only_a_body_that_says_something_is_added(
    github: GitHubMock, client: ActionsClient, response: httpx.Response, shown: str
) -> None:
    github.registration.return_value = response
    with pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(7)
    assert caught.value.message == shown


def test_the_actions_services_message_is_the_error_of_a_service_call(
    github: GitHubMock, client: ActionsClient
) -> None:
    github.service(
        "DELETE", "_apis/distributedtask/pools/0/agents/9"
    ).return_value = httpx.Response(
        404,
        json={
            "typeName": "GitHub.DistributedTask.WebApi.AgentNotFoundException",
            "message": "No agent found with identifier 9.",
        },
        headers={"ActivityId": "act-1"},
    )
    with pytest.raises(RunnerNotFoundError) as caught:
        client.remove_runner(9)
    assert str(caught.value).startswith("No agent found with identifier 9. (DELETE ")
    assert "ActivityId act-1" in str(caught.value)
