"""The project's CRD manifests, shipped in the package for users (``kubectl apply
--server-side -f``) and the tests that check them.

They are generated (``python -m ersctl.crds.generate``, which also writes the embedded
API server's JSON copy of them, checked with them); :func:`load_crds` parses them once
per process (they hold Kubernetes' whole PodSpec schema, twice) and hands out copies.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any, Final

import yaml

CRD_FILES: Final = (
    "actions.github.com_ephemeralrunnersets.yaml",
    "actions.github.com_ephemeralrunners.yaml",
    "actions.github.com_autoscalingrunnersets.yaml",
    "actions.github.com_autoscalinglisteners.yaml",
)

SAFE_LOADER: Final[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe loader, libyaml's when PyYAML has it: about eight times faster on
manifests that carry these CRDs (4 s against 0.5 s for the rendered install)."""


def package_dir() -> Path:
    """The directory holding the manifests (the package is installed unzipped)."""
    return Path(str(resources.files(__name__)))


def crd_paths() -> list[Path]:
    """Filesystem paths of the CRD manifests."""
    return [package_dir() / name for name in CRD_FILES]


def load_crds() -> list[dict[str, Any]]:
    """The CRD manifests as JSON-shaped dicts (fresh copies: callers may mutate them)."""
    loaded: list[dict[str, Any]] = json.loads(_parsed_as_json())
    return loaded


@functools.cache
def _parsed_as_json() -> str:
    # Parsed once; a copy is decoded from JSON, several times faster than a deepcopy.
    docs: list[dict[str, Any]] = []
    for path in crd_paths():
        loaded = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)  # noqa: S506
        if not isinstance(loaded, dict):
            raise ValueError(f"{path.name}: not a single YAML mapping")
        docs.append(loaded)
    return json.dumps(docs)
