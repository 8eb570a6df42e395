"""What an AutoscalingRunnerSet reports: its ``status.phase`` (its Events' reasons,
which ``status.state`` repeats, are ``ersctl.reasons.Reason``). Pure."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

NORMAL: Final = "Normal"
WARNING: Final = "Warning"


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    FAILED = "Failed"
    DELETING = "Deleting"
