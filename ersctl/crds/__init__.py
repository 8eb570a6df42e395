"""The project's CRD manifests, shipped in the package so that the embedded API
server and users (``kubectl apply -f``) load the same files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

CRD_FILES = (
    "actions.github.com_ephemeralrunnersets.yaml",
    "actions.github.com_ephemeralrunners.yaml",
)


def crd_paths() -> list[Path]:
    """Filesystem paths of the CRD manifests (the package is installed unzipped)."""
    base = resources.files(__name__)
    return [Path(str(base.joinpath(name))) for name in CRD_FILES]


def load_crds() -> list[dict[str, Any]]:
    """The CRD manifests as JSON-shaped dicts."""
    docs: list[dict[str, Any]] = []
    for path in crd_paths():
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise ValueError(f"{path.name}: not a single YAML mapping")
        docs.append(loaded)
    return docs
