"""The ports a test or the simulation names before a program listens on them."""

from __future__ import annotations

import socket

import pytest

from ersctl.testing.ports import ephemeral_range, unused_port, worker_slice


def _kernels_ephemeral_range() -> range:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as setting:
        low, high = map(int, setting.read().split())
    return range(low, high + 1)


def test_no_port_handed_out_is_one_the_kernel_could_give_another_program() -> None:
    ephemeral = _kernels_ephemeral_range()
    assert ephemeral_range() == (ephemeral.start, ephemeral.stop - 1)
    ports = [unused_port() for _ in range(50)]
    assert [port for port in ports if port in ephemeral] == []
    assert len(set(ports)) == len(ports)  # never the same one twice in a process


def test_each_worker_has_a_slice_no_other_worker_shares(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "8")
    slices = []
    for index in range(8):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{index}")
        slices.append(set(worker_slice()))
    assert all(len(ports) >= 1000 for ports in slices)
    assert sum(map(len, slices)) == len(set().union(*slices))


def test_a_port_something_listens_on_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # As many workers as ports: each slice is a single port.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(len(worker_slice())))
    for index in range(100):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{index}")
        (port,) = worker_slice()
        with socket.socket() as taken:
            try:
                taken.bind(("127.0.0.1", port))
            except OSError:
                continue  # held by something else on this host: try another slice
            taken.listen()
            with pytest.raises(RuntimeError, match=rf"^no free port left in range\({port}, "):
                unused_port()
        return
    pytest.skip("no free single-port slice among the first 100")
