"""Start the project's servers and the listener as real subprocesses, for end-to-end tests."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import local_http


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        process.kill()
        raise AssertionError(f"{process.args!r} printed nothing within {timeout} s") from None


@contextmanager
def ready_server(*args: str, timeout: float = 30.0) -> Iterator[Server]:
    """Run ``python -m <args>`` until it prints ``ready <url>``; stop it afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = _first_line(process, timeout)
        assert line.startswith("ready "), f"unexpected first line {line!r}"
        yield Server(process=process, url=line.split()[1])
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_listener(
    config: dict[str, Any] | str, tmp_path: Path, kubeconfig: Path
) -> subprocess.Popen[str]:
    """``python -m ghalistener run`` with ``config`` written to a file (a string as is, a
    dict as JSON); stderr captured."""
    path = tmp_path / "listener.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ghalistener",
            "run",
            "--config",
            str(path),
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def sim(server: Server, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """Call the GitHub simulator's control API."""
    response = local_http.request(method, f"{server.url}/_sim{path}", json=body, timeout=10)
    response.raise_for_status()
    return response.json()
