"""The simulator behind a respx router, for in-process tests of ``ActionsClient``.

``mount(router, simulator, base_url="https://ghes.sim")`` routes every request under
``base_url`` into the model; use ``<base_url>/<org>`` as the client's config URL. A
long poll runs in the caller's thread, so set ``hold_seconds`` short (or 0).
"""

from __future__ import annotations

from typing import Any

import httpx

from ghalistener.testing.control import dispatch
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.service import SimRequest

DEFAULT_BASE_URL = "https://ghes.sim"


def mount(router: Any, simulator: GitHubSimulator, *, base_url: str = DEFAULT_BASE_URL) -> Any:
    """Add a route to ``router`` (a ``respx.MockRouter``) that answers from ``simulator``."""
    base = base_url.rstrip("/")

    def answer(request: httpx.Request) -> httpx.Response:
        sim_request = SimRequest(
            method=request.method,
            path=request.url.path,
            query=dict(request.url.params.items()),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=request.read(),
            base_url=base,
        )
        response = dispatch(simulator, sim_request)
        return httpx.Response(response.status, content=response.body, headers=response.headers)

    return router.route(url__startswith=base + "/").mock(side_effect=answer)
