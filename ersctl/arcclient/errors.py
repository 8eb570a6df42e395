"""Errors about ARC's kinds as the cluster serves them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ersctl.api import INSTALL_CRDS_COMMAND
from ersctl.platform.errors import EXIT_USAGE, Failure


class PrunedFieldsError(Failure):
    """The served CustomResourceDefinitions lack fields this project writes, so the API
    server drops them (ARC 0.14's CRDs and the guard fields): a configuration problem of
    the cluster, exit 2. ``fields`` maps each CRD name to the field paths it lacks."""

    exit_code = EXIT_USAGE

    def __init__(self, fields: Mapping[str, Sequence[str]]) -> None:
        lacking = "; ".join(f"{crd} lacks {', '.join(paths)}" for crd, paths in fields.items())
        super().__init__(
            f"the served CRDs drop what the guard writes ({lacking}): install this "
            f"project's CRDs: {INSTALL_CRDS_COMMAND}"
        )
        self.fields = {crd: tuple(paths) for crd, paths in fields.items()}
