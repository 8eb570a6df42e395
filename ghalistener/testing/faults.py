"""Fault injection for the simulator: error bursts, latency, malformed bodies, a BOM.

A fault targets an endpoint name (see ``ghalistener.testing.service.ENDPOINTS``) or "*"
and affects the next ``times`` matching requests (-1: until cleared). The adapters
consult the book once per request, before the model sees it.
"""

from __future__ import annotations

import threading
from typing import Any

from ghalistener.testing.state import Fault


class FaultBook:
    """The injected faults, consumed in the order they were added (thread-safe)."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def inject(
        self,
        *,
        endpoint: str = "*",
        status: int | None = None,
        body: bytes | str | None = None,
        bom: bool = False,
        latency: float = 0.0,
        times: int = 1,
    ) -> Fault:
        """Add a fault. ``status``: answer with it; ``body``: answer 200 with these raw bytes
        (both: answer ``status`` with ``body`` as text); ``bom``: prefix the real answer
        with a UTF-8 BOM; ``latency``: wait first."""
        if times == 0 or times < -1:
            raise ValueError("times must be positive, or -1 for 'until cleared'")
        raw = body.encode() if isinstance(body, str) else body
        fault = Fault(
            endpoint=endpoint, status=status, body=raw, bom=bom, latency=latency, times=times
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, endpoint: str) -> Fault | None:
        """The first live fault for ``endpoint``, counting this use; None when there is none."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(endpoint):
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
            self._faults = [f for f in self._faults if f.times != 0]
            return None

    def clear(self) -> None:
        """Remove every fault."""
        with self._lock:
            self._faults.clear()

    def describe(self) -> list[dict[str, Any]]:
        """The live faults, for the control API."""
        with self._lock:
            return [f.describe() for f in self._faults if f.times != 0]
