"""A stateful GitHub + runner scale-set service simulator for tests and simulations.

- ``GitHubSimulator`` (``ghalistener.testing.model``): the one model, with a Python API
  (``create_scale_set``, ``enqueue_job``, ``start_job``, ``complete_job``,
  ``cancel_job``, ``statistics``, ``expire_tokens``, ``inject_fault``, ``events``,
  ``state``).
- ``mount(router, simulator)`` (``ghalistener.testing.respx_adapter``): answer a respx
  router's requests from the model.
- ``serve(simulator, port=0)`` (``ghalistener.testing.server``) / ``python -m
  ghalistener.testing.github``: the
  same model over real HTTP, GHES-style, with the ``/_sim`` control API documented in
  ``ghalistener.testing.github``.
"""

from __future__ import annotations

from ghalistener.testing.core import SimError
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import SimulatorServer, serve

__all__ = ["GitHubSimulator", "SimError", "SimulatorServer", "serve"]
