"""Layers point down: cli -> runtime (ersctl.kube) -> ports/resource model, and only the
runtime's adapters (and the CLI that builds clients) touch the Kubernetes client."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ersctl"
RUNTIME = [*sorted((PACKAGE / "kube").glob("*.py")), PACKAGE / "errors.py", PACKAGE / "metrics.py"]
# The reconciler's pure core and its ports: decisions and data, no client library.
CORE = [PACKAGE / name for name in ("api.py", "ports.py", "runners.py", "scaling.py", "status.py")]


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in RUNTIME])
def test_the_runtime_never_imports_a_reconciler_or_the_cli(path: Path) -> None:
    upward = {
        name for name in imports(path)
        if name.startswith(("ersctl.reconciler", "ersctl.cli", "ersctl.runner", "ersctl.scaling",
                            "ersctl.cleanup", "ersctl.creation", "ersctl.markers"))
    }  # fmt: skip
    assert upward == set()


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in CORE if p.exists()])
def test_the_reconcilers_core_does_not_touch_the_kubernetes_client(path: Path) -> None:
    client_imports = {n for n in imports(path) if n.split(".")[0] in ("kubernetes", "urllib3")}
    assert client_imports == set()
