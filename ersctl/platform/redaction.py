"""Secret redaction: one redactor per process, for log lines and exception texts alike.

Both programs register every credential they load (a token, an App private key) and
every secret they learn at run time (an admin or message-queue token, a JIT config);
the log formatter (``ersctl.platform.logs``) and the GitHub client's error texts pass
through :data:`REDACTOR`, so a value registered anywhere is hidden everywhere.

Values are replaced whole: an occurrence counts only where no letter or digit touches
it on either side, so a registered value can never cut into another word; values
shorter than :data:`MIN_SECRET_LENGTH` are not registered at all (configuration
refuses tokens that short). Shapes of secrets are hidden even when nobody registered
them: PEM private keys, ``Bearer``/``RemoteAuth`` credentials, GitHub tokens, JWTs.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Final

REDACTED: Final = "[REDACTED]"
MIN_SECRET_LENGTH: Final = 8
RECENT_LIMIT: Final = 512
"""Run-time secrets remembered at once (a controller mints a JIT config per runner,
forever); credentials are kept for the life of the process."""

_SECRET_PATTERNS: Final = (
    (
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S
        ),
        REDACTED,
    ),
    (re.compile(r"\b(Bearer|RemoteAuth)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {REDACTED}"),
    (re.compile(r"\b(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{8,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"), REDACTED),
)


class Redactor:
    """Remembers secret values and hides them, and secret shapes, in any text.

    Thread-safe. ``add(..., pin=True)`` keeps a value for the life of the redactor;
    other values live in a window of the :data:`RECENT_LIMIT` most recent.
    """

    def __init__(self) -> None:
        self._pinned: set[str] = set()
        self._recent: dict[str, None] = {}  # an insertion-ordered set
        self._lock = threading.Lock()

    def add(self, secrets: Iterable[str], *, pin: bool = False) -> None:
        """Register values that must never be shown. A multi-line value (a PEM key) is
        registered line by line too, since it may be printed one line at a time."""
        values: list[str] = []
        for secret in secrets:
            values.append(secret)
            values.extend(line.strip() for line in secret.splitlines() if "-----" not in line)
        with self._lock:
            for value in (v for v in values if len(v) >= MIN_SECRET_LENGTH):
                if pin:
                    self._pinned.add(value)
                    continue
                self._recent.pop(value, None)
                self._recent[value] = None
                if len(self._recent) > RECENT_LIMIT:
                    del self._recent[next(iter(self._recent))]

    def __call__(self, text: str) -> str:
        """``text`` with every registered value and every secret shape replaced."""
        with self._lock:
            # Longest first, so a value containing another is replaced whole.
            values = sorted(self._pinned.union(self._recent), key=len, reverse=True)
        for value in values:
            if value in text:  # the cheap test first: most lines hold no secret
                text = _whole(value).sub(REDACTED, text)
        for shape, replacement in _SECRET_PATTERNS:
            text = shape.sub(replacement, text)
        return text


def _whole(value: str) -> re.Pattern[str]:
    """``value`` where no letter or digit touches it on either side."""
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])")


REDACTOR: Final = Redactor()
"""The process's redactor: what the log formatter and the GitHub client consult."""
