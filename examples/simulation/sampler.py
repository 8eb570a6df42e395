"""Run a module under a sampling profiler, for the benchmarks (not product code).

    python -m simulation.sampler OUT MODULE [ARGS...]

runs ``python -m MODULE ARGS...`` and, every millisecond of process CPU (SIGPROF),
counts the stack of every thread not blocked in a wait or a socket read; at exit it
writes the hottest functions, inclusive and own, to OUT. SIGUSR1 clears the counts
(the benchmark sends it when start-up is over, so only the measured part is counted);
SIGUSR2 writes OUT and stops sampling (the programs end with ``os._exit``, which skips
the exit-time write: ``ersctl.platform.interrupt.exit_now``).
cProfile misleads here: its cost per call inflates code made of many tiny calls.
(``examples/bench_listener.py`` carries the same sampler inline for the listener.)
"""

from __future__ import annotations

import collections
import runpy
import signal
import sys
from pathlib import Path
from types import FrameType

# Top frames of a thread blocked in a call that does not use the CPU (a lock, a socket).
WAITING = {
    "wait",
    "_wait_for_tstate_lock",
    "readinto",
    "recv_into",
    "recv",
    "select",
    "poll",
    "accept",
    "sleep",
    "read",
    "_read_status",
    "readline",
    "is_socket_readable",
}
Key = tuple[str, str]
inclusive: collections.Counter[Key] = collections.Counter()
own: collections.Counter[Key] = collections.Counter()


def _sample(signum: int, frame: FrameType | None) -> None:
    for top in sys._current_frames().values():
        if top.f_code is _sample.__code__:  # the main thread: the frame the signal interrupted
            top = frame  # type: ignore[assignment]
        if top is None or top.f_code.co_name in WAITING:
            continue
        own[(top.f_code.co_filename, top.f_code.co_name)] += 1
        seen: set[Key] = set()
        current: FrameType | None = top
        while current is not None:
            key = (current.f_code.co_filename, current.f_code.co_name)
            if key not in seen:
                seen.add(key)
                inclusive[key] += 1
            current = current.f_back


def _restart(signum: int, frame: FrameType | None) -> None:
    inclusive.clear()
    own.clear()


def _dump(path: Path) -> None:
    if path.exists() and not own:
        return  # written on SIGUSR2 already
    signal.setitimer(signal.ITIMER_PROF, 0)
    total = max(1, sum(own.values()))
    lines = [f"{total} samples of 1 ms CPU (threads not blocked)"]
    for title, counts in (("inclusive", inclusive), ("own", own)):
        lines.append(f"-- {title}")
        for (file, name), n in counts.most_common(60):
            short = file.split("site-packages/")[-1].split("/work/")[-1]
            lines.append(f"{100 * n / total:6.1f}%  {short}:{name}")
    path.write_text("\n".join(lines) + "\n")
    inclusive.clear()
    own.clear()


def main() -> None:
    out, module, *args = sys.argv[1:]
    signal.signal(signal.SIGUSR1, _restart)
    signal.signal(signal.SIGUSR2, lambda signum, frame: _dump(Path(out)))
    signal.signal(signal.SIGPROF, _sample)
    signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        _dump(Path(out))


if __name__ == "__main__":
    main()
