"""The EphemeralRunner controller's defaults that ``ersctl reconcile --help`` shows, apart
from the controller: the command line reads them without importing it (and with it the
Kubernetes client), so its help and a typo are answered at once."""

from __future__ import annotations

from typing import Final

DEFAULT_WORKERS: Final = 16
"""Runner reconciles at once (``--runner-max-concurrent-reconciles``). ARC ships 2; ours
is higher because a new runner's reconcile mostly waits: on GitHub to generate its JIT
config (~100-300 ms) and on three or four API round trips, so with 2 workers a burst of
500 runners is registered at about 2 / 0.2 s = 10 a second. 16 keep the GitHub calls
well inside the scale-set service's limits (one call per runner, whatever the workers)
while a burst of 500 takes seconds, not a minute; the reconciles share the process's
CPU, so more would buy little on a controller with one or two cores."""
