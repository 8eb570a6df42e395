"""A TCP port of 127.0.0.1 to name before anything listens on it: a program's
``--metrics-addr`` in a test, a simulated Pod's port (``examples/simulation``), an
address where nothing answers, a server restarted where it was.

Asking the kernel (bind to port 0, close, hand the number on) races: until the program
binds it, the port is back in the kernel's ephemeral range, which every embedded API
server and every outgoing connection on the host draws from. A test then polled someone
else's server at "its" port: an embedded API server's ``/readyz`` answered 200 and its
``/metrics`` had none of the controller's series (a CI run failed so).

These ports come from outside the ephemeral range, so the kernel gives none of them to
anyone, and each pytest-xdist worker has a slice of its own (``PYTEST_XDIST_WORKER``),
so no two workers meet. A program a test starts inherits its worker's slice: the test
process takes from one half of it and any other process from the other, so a simulated
kubelet in that program cannot take a port its test named either. What stays left to
chance: two programs of one test both naming ports, and two runs at once on one host
(each picks at random in its slice, and a port already bound is never handed out).
"""

from __future__ import annotations

import os
import random
import socket
import sys
from pathlib import Path
from typing import Final

_EPHEMERAL_RANGE: Final = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST: Final = 10000
"""Below this are the well-known and commonly configured service ports; used only when
the ephemeral range leaves too few above it."""
_ENOUGH: Final = 200
"""Ports a process's share needs at the least (a run names a few dozen)."""

_handed_out: set[int] = set()
_order = random.Random()  # its own: hypothesis reseeds the global one inside its tests


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel picks from for port 0 and outgoing connections (Linux's
    default when the setting cannot be read, as on other systems)."""
    try:
        low, high = _EPHEMERAL_RANGE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def worker_slice() -> range:
    """This process's ports: its xdist worker's share of those outside the ephemeral
    range (all of them outside xdist), the half for a test process or the half for a
    program one started. RuntimeError naming the setting when the range leaves too few."""
    count = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1), 1)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    # A worker xdist starts in place of one that crashed gets the next number (gw8 of 8).
    index %= count
    low, high = ephemeral_range()
    shares = 2 * count
    for region in (
        max(range(_LOWEST, low), range(high + 1, 65536), key=len),
        max(range(1024, low), range(high + 1, 65536), key=len),
    ):
        size = len(region) // shares
        if size >= _ENOUGH:
            # pytest loaded: a test process; else a program a test (or a user) started.
            half = 0 if "pytest" in sys.modules else 1
            start = (2 * index + half) * size
            return region[start : start + size]
    raise RuntimeError(
        f"{_EPHEMERAL_RANGE} ({low} {high}) leaves fewer than {_ENOUGH} ports outside it "
        f"for each of {shares} shares"
    )


def unused_port() -> int:
    """A port of this process's slice that is free now and was not handed out before in
    this process (a test's stopped program may still hold its last one)."""
    ports = worker_slice()
    for _ in range(100):  # at random first: nearly always the first try
        port = _order.choice(ports)
        if port not in _handed_out and _bindable(port):
            break
    else:
        free = [p for p in ports if p not in _handed_out and _bindable(p)]
        if not free:
            raise RuntimeError(f"no free port left in {ports}")
        port = _order.choice(free)
    _handed_out.add(port)
    return port


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
