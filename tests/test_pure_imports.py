"""The pure decision modules load no client library at run time either.

``lint-imports`` holds the contract statically (pyproject.toml); this checks what the
interpreter really loads, package ``__init__`` modules included (a package that
re-exported its HTTP client once made every import of its pure types load httpx).
The modules and libraries are those of that contract (every module of both packages
but its named I/O modules), so the two cannot drift.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import grimp

from tests.importcontracts import AllButContract, sources

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
CONTRACT = "Pure decision modules import no Kubernetes, HTTP, JWT or metrics library"


def pure_contract() -> dict[str, Any]:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = (c for c in contracts if c["name"] == CONTRACT)
    return dict(contract)


def pure_modules() -> list[str]:
    options = {k: v for k, v in pure_contract().items() if k not in ("name", "type")}
    contract = AllButContract(name=CONTRACT, session_options={}, contract_options=options)
    return sources(grimp.build_graph("ersctl", "ghalistener", cache_dir=None), contract)


def test_the_pure_contract_holds_every_module_it_does_not_name_as_io() -> None:
    pure = pure_modules()
    assert {
        "ersctl.ephemeralrunnerset.scaling",
        "ghalistener.scaler",
        "ersctl.kube.predicates",
    } <= set(pure)
    assert "ersctl.kube.client" not in pure and "ghalistener.publisher" not in pure
    # Modules no list named before the contract was stated over the packages.
    assert {"ersctl.kube.store", "ghalistener.actions.messages", "ghalistener.errors"} <= set(pure)


def test_importing_every_pure_module_loads_none_of_the_forbidden_libraries() -> None:
    contract = pure_contract()
    probe = (
        "import importlib, json, sys\n"
        f"for name in {pure_modules()!r}: importlib.import_module(name)\n"
        f"roots = set({contract['forbidden_modules']!r})\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & roots)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout) == []
