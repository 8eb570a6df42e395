"""Run a module under a profiler, for the benchmarks (not product code).

    python -m simulation.sampler [--cprofile] OUT MODULE [ARGS...]

runs ``python -m MODULE ARGS...`` and, every 5 ms of process CPU (SIGPROF), charges
each thread's stack with the CPU time that thread used since the last sample (Linux's
``/proc/self/task/TID/schedstat``, in ns); at exit it writes the hottest functions,
inclusive and own, in ms of CPU, to OUT. Weighing by each thread's own CPU matters with
many threads: counting every thread not blocked charges threads that wait for the GIL
or a lock as if they ran. A call shorter than the interval is charged to the frame the
next sample finds (a poll thread's CPU lands on its wait loop): read it with
``--cprofile``'s counts. SIGUSR1 clears the counts
(the benchmark sends it when start-up is over, so only the measured part is counted);
SIGUSR2 writes OUT and stops sampling (the programs end with ``os._exit``, which skips
the exit-time write: ``ersctl.platform.interrupt.exit_now``).
``--cprofile``: deterministic instead, one cProfile per thread from SIGUSR1 to SIGUSR2
(threads started meanwhile included), merged, timed by each thread's CPU clock (wall
time would count the waits for the GIL and the sockets): exact call counts, but its
cost per call inflates code made of many tiny calls (URL parsing, field checks)
several times over: read its counts, weigh its times with the sampler's.
"""

from __future__ import annotations

import collections
import cProfile
import io
import pstats
import runpy
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Protocol

INTERVAL = 0.005
Key = tuple[str, str]
inclusive: dict[Key, float] = collections.defaultdict(float)
own: dict[Key, float] = collections.defaultdict(float)
_cpu_ns: dict[int, int] = {}  # native thread id -> CPU ns at the last sample


def _thread_cpu_ns(native_id: int) -> int | None:
    try:
        with open(f"/proc/self/task/{native_id}/schedstat", "rb") as stat:
            return int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None  # the thread ended meanwhile


def _sample(signum: int, frame: FrameType | None) -> None:
    active = threading._active  # type: ignore[attr-defined]  # no lock in a signal handler
    for ident, top in sys._current_frames().items():
        thread = active.get(ident)
        native_id = getattr(thread, "native_id", None)
        now = None if native_id is None else _thread_cpu_ns(native_id)
        if native_id is None or now is None:
            continue
        used_ms = (now - _cpu_ns.get(native_id, now)) / 1e6
        _cpu_ns[native_id] = now
        if top.f_code is _sample.__code__:  # the main thread: the frame the signal interrupted
            top = frame  # type: ignore[assignment]
        if top is None or used_ms <= 0:
            continue
        own[(top.f_code.co_filename, top.f_code.co_name)] += used_ms
        seen: set[Key] = set()
        current: FrameType | None = top
        while current is not None:
            key = (current.f_code.co_filename, current.f_code.co_name)
            if key not in seen:
                seen.add(key)
                inclusive[key] += used_ms
            current = current.f_back


def _restart(signum: int, frame: FrameType | None) -> None:
    inclusive.clear()
    own.clear()
    _cpu_ns.clear()


def _dump(path: Path) -> None:
    if path.exists() and not own:
        return  # written on SIGUSR2 already
    signal.setitimer(signal.ITIMER_PROF, 0)
    total = max(1.0, sum(own.values()))
    lines = [f"{total:.0f} ms of CPU sampled (each thread's own, every {INTERVAL * 1000:g} ms)"]
    for title, counts in (("inclusive", inclusive), ("own", own)):
        lines.append(f"-- {title}")
        for (file, name), n in sorted(counts.items(), key=lambda kv: -kv[1])[:60]:
            short = file.split("site-packages/")[-1].split("/work/")[-1]
            lines.append(f"{100 * n / total:6.1f}% {n:8.0f} ms  {short}:{name}")
    _write_whole(path, "\n".join(lines) + "\n")
    inclusive.clear()
    own.clear()


class _DeterministicProfile:
    """One cProfile per thread, from :meth:`start` to :meth:`write`."""

    def __init__(self) -> None:
        self._profiles: list[cProfile.Profile] = []

    def start(self, signum: int = 0, frame: FrameType | None = None) -> None:
        threading.setprofile(self._profile_this_thread)  # threads started from now on
        self._profile_this_thread()  # this one: the main thread

    def _profile_this_thread(self, *_: object) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile(time.thread_time)  # the thread's own CPU, not its waits
        self._profiles.append(profile)
        profile.enable()

    def write(self, path: Path) -> None:
        threading.setprofile(None)
        for profile in self._profiles:
            profile.disable()
        if not self._profiles or (path.exists() and path.stat().st_size):
            return
        text = io.StringIO()
        stats = pstats.Stats(*self._profiles, stream=text)
        for order in ("cumulative", "tottime"):
            stats.sort_stats(order).print_stats(60)
        _write_whole(path, text.getvalue())


def _write_whole(path: Path, text: str) -> None:
    """Write ``path`` by a rename, so a reader waiting for it never reads it half written."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


class _Signalable(Protocol):
    def send_signal(self, signum: int, /) -> None: ...


def request_report(program: _Signalable, path: Path, *, timeout: float = 60.0) -> None:
    """Have ``program`` (run under this module, writing to ``path``) stop sampling and
    write its report now (SIGUSR2); returns once the report is there, whole.
    SystemExit naming ``path`` when it is not within ``timeout`` seconds."""
    path.unlink(missing_ok=True)
    program.send_signal(signal.SIGUSR2)
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"the profiled program wrote no {path} within {timeout:.0f} s")
        time.sleep(0.05)


def main() -> None:
    args = sys.argv[1:]
    deterministic = args[:1] == ["--cprofile"]
    out, module, *rest = args[1:] if deterministic else args
    path = Path(out)
    if deterministic:
        profile = _DeterministicProfile()
        signal.signal(signal.SIGUSR1, profile.start)
        signal.signal(signal.SIGUSR2, lambda signum, frame: profile.write(path))
    else:
        signal.signal(signal.SIGUSR1, _restart)
        signal.signal(signal.SIGUSR2, lambda signum, frame: _dump(path))
        signal.signal(signal.SIGPROF, _sample)
        signal.setitimer(signal.ITIMER_PROF, INTERVAL, INTERVAL)
    sys.argv = [module, *rest]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        profile.write(path) if deterministic else _dump(path)


if __name__ == "__main__":
    main()
