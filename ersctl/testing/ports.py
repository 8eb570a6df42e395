"""A TCP port of 127.0.0.1 to name before anything listens on it: a program's
``--metrics-addr`` in a test, a simulated Pod's port (``examples/simulation``), an
address where nothing answers, a server restarted where it was.

Asking the kernel (bind to port 0, close, hand the number on) races: until the program
binds it, the port is back in the kernel's ephemeral range, which every embedded API
server and every outgoing connection on the host draws from. A test then polled someone
else's server at "its" port: an embedded API server's ``/readyz`` answered 200 and its
``/metrics`` had none of the controller's series (a CI run failed so). These ports come
from outside the ephemeral range, in a slice of their own for each pytest-xdist worker
(``PYTEST_XDIST_WORKER``; a program a test starts inherits its worker's slice), so
nothing else in the run is given them.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path
from typing import Final

_EPHEMERAL_RANGE: Final = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST: Final = 10000
"""Below this are the well-known and commonly configured service ports."""

_handed_out: set[int] = set()
_order = random.Random()  # its own: hypothesis reseeds the global one in its tests


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel picks from for port 0 and outgoing connections (Linux's
    default when the setting cannot be read)."""
    try:
        low, high = _EPHEMERAL_RANGE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def worker_slice() -> range:
    """This xdist worker's ports: its share of those between ``_LOWEST`` and the
    ephemeral range (all of them outside xdist)."""
    low, high = ephemeral_range()
    below = range(_LOWEST, low)
    above = range(high + 1, 65536)
    region = below if len(below) >= len(above) else above
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker.removeprefix("gw")) if worker.startswith("gw") else 0
    size = len(region) // max(count, 1)
    return region[index * size : (index + 1) * size]


def unused_port() -> int:
    """A port of this worker's slice that is free now and was not handed out before in
    this process (a test's stopped program may still hold its last one)."""
    candidates = [port for port in worker_slice() if port not in _handed_out]
    _order.shuffle(candidates)  # two processes sharing a slice rarely meet
    for port in candidates:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port left in {worker_slice()}")
