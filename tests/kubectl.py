"""The machine's kubectl, as a user runs it: :class:`Kubectl` (its own kubeconfig and
discovery cache), and ``needs_kubectl``, which skips a test when it is not installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

KUBECTL = shutil.which("kubectl")

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


class Kubectl:
    """kubectl with its own kubeconfig and discovery cache."""

    def __init__(self, kubeconfig: Path, cache: Path) -> None:
        self.kubeconfig = kubeconfig
        self.cache = cache

    def command(self, *args: str) -> list[str]:
        return [str(KUBECTL), f"--cache-dir={self.cache}", *args]

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def __call__(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            self.command("--request-timeout=20s", *args),
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
            check=False,
        )
        if check:
            assert result.returncode == 0, result.stderr
        return result

    def json(self, *args: str) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self(*args, "-o", "json").stdout)
        return doc

    def table(self, *args: str) -> list[list[str]]:
        """``kubectl get``'s output as rows of cells (the header first), split where
        two or more spaces are."""
        lines = self("get", *args).stdout.splitlines()
        return [re.split(r"\s{2,}", line.strip()) for line in lines if line.strip()]
