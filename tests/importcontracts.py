"""import-linter contract types of this repository (``[tool.importlinter]``
``contract_types``; ``lint-imports`` runs from the repository root, which it puts on
the import path).

:class:`AllButContract` is a forbidden contract whose sources are *every* module the
``source_modules`` expressions match except the ``except_modules`` ones: the pure
contract names the packages and the I/O modules, so a new module is held pure from its
first line, and only a new I/O module has to be named (the contract fails until it is,
saying which library it reaches and through what).
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.domain import fields
from importlinter.domain.contract import ContractCheck
from importlinter.domain.helpers import module_expressions_to_modules
from importlinter.domain.imports import ModuleExpression


class AllButContract(ForbiddenContract):
    """``forbidden``, over all matched modules but ``except_modules`` (as modules: a
    package's exception does not cover its submodules)."""

    except_modules = fields.SetField(subfield=fields.ModuleExpressionField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        self.source_modules = {  # type: ignore[assignment]
            ModuleExpression(name) for name in sources(graph, self)
        }
        self.as_packages = False  # type: ignore[assignment]
        return super().check(graph, verbose)


def sources(graph: ImportGraph, contract: AllButContract) -> list[str]:
    """The modules ``contract`` holds: matched by its sources, not by its exceptions."""
    matched = module_expressions_to_modules(graph, contract.source_modules)  # type: ignore[arg-type]
    excepted = module_expressions_to_modules(graph, contract.except_modules)  # type: ignore[arg-type]
    return sorted({m.name for m in matched} - {m.name for m in excepted})
