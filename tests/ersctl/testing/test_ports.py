"""The ports a test or the simulation names before a program listens on them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ersctl.testing import ports
from ersctl.testing.ports import ephemeral_range, unused_port, worker_slice

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


@pytest.mark.skipif(not EPHEMERAL_RANGE.exists(), reason="Linux's port range setting")
def test_no_port_handed_out_is_one_the_kernel_could_give_another_program() -> None:
    low, high = map(int, EPHEMERAL_RANGE.read_text().split())
    assert ephemeral_range() == (low, high)
    handed = [unused_port() for _ in range(50)]
    assert [port for port in handed if low <= port <= high] == []
    assert len(set(handed)) == len(handed)  # never the same one twice in a process


def _program_slice(env: dict[str, str]) -> set[int]:
    """The slice a program (no pytest loaded) started with ``env`` would take from."""
    code = "import json; from ersctl.testing.ports import worker_slice as s; r = s()"
    code += "; print(json.dumps([r.start, r.stop]))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    start, stop = json.loads(done.stdout)
    return set(range(start, stop))


def test_workers_and_the_programs_they_start_share_no_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "8")
    slices = []
    for index in range(8):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{index}")
        slices.append(set(worker_slice()))
        slices.append(_program_slice(dict(os.environ)))
    assert all(len(share) >= 200 for share in slices)
    assert sum(map(len, slices)) == len(set().union(*slices))


def test_a_worker_started_in_place_of_a_crashed_one_has_ports_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "8")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw8")  # xdist numbers the replacement on
    assert len(worker_slice()) >= 200
    monkeypatch.setattr(ports, "_handed_out", set())
    assert unused_port() in worker_slice()


def test_a_port_something_listens_on_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    share = worker_slice()
    for port in share:
        with socket.socket() as taken:
            try:
                taken.bind(("127.0.0.1", port))
            except OSError:
                continue  # held by something else on this host: take another
            taken.listen()
            # Every other port of the slice handed out already: only this one is left.
            monkeypatch.setattr(ports, "_handed_out", set(share) - {port})
            with pytest.raises(RuntimeError, match=r"^no free port left in range\("):
                unused_port()
        return
    pytest.fail(f"no port of {share} could be bound")
