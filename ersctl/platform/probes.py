"""What a liveness or readiness probe answers. Pure, so the decisions behind the probes
(``ghalistener.health``, the controller's cache sync) import no HTTP or metrics library;
``ersctl.platform.serving`` turns a :class:`Verdict` into 200 or 503.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """One probe's answer: ``ok`` (HTTP 200) or not (503), with a one-line reason."""

    ok: bool
    reason: str = "ok"


Probe = Callable[[], Verdict]


def always_ok() -> Verdict:
    """The probe of something that has no way to be unwell."""
    return Verdict(ok=True)
