"""The embedded API server's own command line (``python -m ersctl.testing.apiserver``)
in a subprocess, as a user starts it beside kubectl or the programs under test."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.kubectl import Kubectl


class Standalone:
    """``python -m ersctl.testing.apiserver`` in a subprocess, and kubectl against it."""

    def __init__(self, tmp_path: Path, *extra: str) -> None:
        kubeconfig = tmp_path / "kubeconfig"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ersctl.testing.apiserver",
                "--port",
                "0",
                "--kubeconfig",
                str(kubeconfig),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.ready_line = self.process.stdout.readline().strip()
        self.kubectl = Kubectl(kubeconfig, tmp_path / "kube-cache")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=10)
        finally:
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()
