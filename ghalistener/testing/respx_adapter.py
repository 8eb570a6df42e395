"""The simulator behind httpx mocks, for in-process tests of ``ActionsClient``.

- ``mount(router, simulator, base_url=...)``: a route on a respx router;
- ``mock_transport(simulator, base_url=...)``: an ``httpx.MockTransport`` to pass as
  ``ActionsClient(transport=...)`` (no respx needed).

Use ``<base_url>/<org>`` as the client's config URL. A long poll runs in the caller's
thread, so keep ``hold_seconds`` short (or 0).
"""

from __future__ import annotations

from typing import Any

import httpx

from ghalistener.testing.control import dispatch
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.service import SimRequest

DEFAULT_BASE_URL = "https://ghes.sim"


def answer(simulator: GitHubSimulator, request: httpx.Request, *, base_url: str) -> httpx.Response:
    """Answer one httpx request from the simulator."""
    sim_request = SimRequest(
        method=request.method,
        path=request.url.path,
        query=dict(request.url.params.items()),
        headers={k.lower(): v for k, v in request.headers.items()},
        body=request.read(),
        base_url=base_url.rstrip("/"),
    )
    response = dispatch(simulator, sim_request)
    return httpx.Response(response.status, content=response.body, headers=response.headers)


def mount(router: Any, simulator: GitHubSimulator, *, base_url: str = DEFAULT_BASE_URL) -> Any:
    """Add a route to ``router`` (a ``respx.MockRouter``) that answers from ``simulator``."""
    return router.route(url__startswith=base_url.rstrip("/") + "/").mock(
        side_effect=lambda request: answer(simulator, request, base_url=base_url)
    )


def mock_transport(
    simulator: GitHubSimulator, *, base_url: str = DEFAULT_BASE_URL
) -> httpx.MockTransport:
    """An httpx transport answering every request from ``simulator``."""
    return httpx.MockTransport(lambda request: answer(simulator, request, base_url=base_url))
