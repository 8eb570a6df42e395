"""Layering: the client depends on nothing above it; httpx stays behind the transport."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ghalistener.actions
import ghalistener.testing

ACTIONS = Path(ghalistener.actions.__file__).parent
TESTING = Path(ghalistener.testing.__file__).parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in sorted(ACTIONS.glob("*.py"))])
def test_the_client_imports_only_itself_from_the_project(path: Path) -> None:
    ours = {m for m in imported_modules(path) if m.split(".")[0] in {"ghalistener", "ersctl"}}
    assert all(m.startswith("ghalistener.actions") for m in ours), ours


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in sorted(TESTING.glob("*.py"))])
def test_the_simulator_uses_only_the_clients_types(path: Path) -> None:
    ours = {m for m in imported_modules(path) if m.split(".")[0] in {"ghalistener", "ersctl"}}
    assert all(
        m.startswith("ghalistener.testing") or m == "ghalistener.actions.types" for m in ours
    ), ours


def test_client_and_session_reach_httpx_only_through_transport_types() -> None:
    # session.py and messages.py never touch httpx; the client only passes URLs/responses
    # to the transport, which alone translates httpx errors.
    for name in ("session.py", "messages.py", "errors.py", "types.py", "auth.py", "config.py"):
        assert "httpx" not in imported_modules(ACTIONS / name), name
