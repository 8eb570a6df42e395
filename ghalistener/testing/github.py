"""A simulated GitHub (GHES-style) with its runner scale-set service, over HTTP.

Run::

    python -m ghalistener.testing.github --port 8765 [--host 127.0.0.1] [--hold 50]
        [--scale-set arc-runners ...] [--admin-token-ttl 3600] [--session-idle-timeout 120]
        [--runner-offline-delay 50]

It prints ``ready http://127.0.0.1:8765`` once serving, then runs until SIGINT/SIGTERM.
Queue jobs on one of its scale sets (as a workflow run would; its listener then asks
for runners)::

    python -m ghalistener.testing.github queue --url http://127.0.0.1:8765 \
        --scale-set arc-runners [--count 3]

Point a client at the config URL ``http://127.0.0.1:8765/<org>`` with any PAT: the
REST API is under ``/api/v3`` (installation token, registration token by scope, admin
connection), the actions service under ``/_services/actions/``. Scale sets named with
``--scale-set`` are created at start with ids 1, 2, ... in runner group 1 ("Default").

Control API (JSON in, JSON out; errors are ``{"error": "..."}`` with 4xx):

==========================================  ======================================================
``GET  /_sim/health``                       ``{"ok": true, "endpoints": [names faults can target]}``
``GET  /_sim/state``                        scale sets (+statistics, unacked message ids), sessions,
                                            jobs (requestId, state, runnerId, result), runners, faults
``GET  /_sim/events?since=SEQ``             ``{"events": [{"seq", "time", "kind", ...}]}``; kinds:
                                            token.issued, admin.connected, scaleset.*, session.*,
                                            job.available/assigned/started/completed, jobs.acquired,
                                            message.delivered/acked, runner.registered/online/
                                            offline/removed/deregistered, tokens.expired,
                                            fault.injected
``POST /_sim/scalesets``                    ``{"name", "runnerGroupId"?, "labels"?}`` -> scale set
``GET  /_sim/scalesets/{id}/statistics``    statistics computed from the model
``POST /_sim/jobs``                         ``{"scaleSetId", "count"?=1, "repository"?="org/repo",
                                            "displayName"?, "workflowRef"?, "labels"?}``
                                            -> ``{"requestIds": [...]}`` (jobs become available)
``POST /_sim/jobs/{id}/complete``           ``{"result"?="succeeded"}``: finish a running job
``POST /_sim/jobs/{id}/cancel``             ``{"requeue"?=true}``: JobCompleted "canceled", then
                                            available again (at most 3 times)
``POST /_sim/runners/connect``              ``{"jitConfig": encodedJITConfig}`` -> the runner
                                            (``id``, ``name``, ``runnerScaleSetId``); marks it online
``POST /_sim/runners/{id}/disconnect``      ``{"graceful"?=false}``: the runner's process ended;
                                            offline now when graceful (it deleted its session),
                                            else once its long poll lapses (runnerOfflineDelay)
``POST /_sim/runners/{id}/start``           ``{"requestId"?}``: start that (else the oldest)
                                            assigned job of the runner's scale set on this idle
                                            runner -> ``{"requestId"}``; 409 if none or busy
``POST /_sim/runners/{id}/complete``        ``{"result"?="succeeded"}``: finish the runner's job;
                                            an ephemeral runner is then deregistered
``POST /_sim/tokens/expire``                ``{"kind"?: "all" | "admin" | "queue"}``: the next call
                                            with such a token gets 401
``POST /_sim/faults``                       ``{"endpoint"?="*", "status"?, "body"?, "bom"?,
                                            "latency"?, "times"?=1}``: next ``times`` requests to the
                                            endpoint answer ``status``, or 200 with the raw ``body``
                                            (both: ``status`` with ``body`` as text/plain),
                                            or the real answer after a UTF-8 BOM; ``latency`` seconds
                                            first; ``times`` -1 = until cleared
``DELETE /_sim/faults``                     clear all faults
``PATCH /_sim/settings``                    ``{"holdSeconds"?, "ephemeral"?, "adminTokenTtl"?,
                                            "sessionIdleTimeout"? (null: never),
                                            "runnerOfflineDelay"?}``
==========================================  ======================================================

A runner agent's life: ``generatejitconfig`` (through the service, as the controller
does) -> ``POST /_sim/runners/connect`` with the JIT config -> ``POST
/_sim/runners/{id}/start`` once the listener has acquired a job (it is then assigned)
-> ``POST /_sim/runners/{id}/complete``.

Job lifecycle: available -> acquired (acquirejobs) -> assigned (while assigned +
running < the last ``X-ScaleSetMaxCapacity``) -> running -> completed. Statistics:
totalAssignedJobs counts assigned + running jobs. One message session per scale set
(409 for a second); a message stays queued until acknowledged and is delivered again
to the next session (or to a poll with a lower ``lastMessageId``).

Orphaned sessions: as the real service does when a listener dies without deleting its
session, a session that nobody uses (no poll, ack, acquire or refresh, and no long poll
held for it) for ``--session-idle-timeout`` seconds is dropped (event
``session.expired``; its owner then gets 404, and the next create succeeds and receives
the unacknowledged messages). GitHub does not publish its timeout; the default, 120 s,
sits inside the window its clients wait out a 409 (ARC: 4.5 min). 0 = never; tests use
a second or two.

Dead runners: a runner stays online until its process ends. One that exits cleanly
deletes its session and is offline at once; one whose process died (``POST
/_sim/runners/{id}/disconnect``) is listed online until its long poll lapses,
``--runner-offline-delay`` seconds (default 50: the long poll GitHub documents for its
runners).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence

import httpx

from ersctl.platform.interrupt import stop_on_signals
from ghalistener.testing.core import DEFAULT_RUNNER_OFFLINE_DELAY, DEFAULT_SESSION_IDLE_TIMEOUT
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve

QUEUE_HELP = (
    "To queue jobs on a running simulator's scale set (as a workflow run would; its "
    "listener then asks for runners): python -m ghalistener.testing.github queue --url "
    "http://127.0.0.1:8765 --scale-set arc-runners [--count 3]"
)


def queue(argv: Sequence[str]) -> int:
    """``queue``: POST the jobs to a running simulator; one line, exit 1, on failure."""
    parser = argparse.ArgumentParser(
        prog="python -m ghalistener.testing.github queue",
        description="Queue jobs on a scale set of a running simulator.",
    )
    parser.add_argument("--url", required=True, help="the simulator, as it printed (ready URL)")
    parser.add_argument("--scale-set", required=True, help="the scale set's name")
    parser.add_argument("--count", type=int, default=1, help="jobs to queue (default 1)")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be 1 or more")
    base = args.url.rstrip("/")
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            scale_sets = http.get("/_sim/state").raise_for_status().json()["scaleSets"]
            found = [s for s in scale_sets if s["name"] == args.scale_set]
            if not found:
                names = ", ".join(sorted(s["name"] for s in scale_sets)) or "none yet"
                print(
                    f"queue: no scale set {args.scale_set!r} at {base} ({names})", file=sys.stderr
                )
                return 1
            body = {"scaleSetId": found[0]["id"], "count": args.count}
            ids = http.post("/_sim/jobs", json=body).raise_for_status().json()["requestIds"]
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        print(f"queue: cannot reach the simulator at {base}: {exc}", file=sys.stderr)
        return 1
    print(f"queued {len(ids)} job(s) on scale set {args.scale_set} (request ids {ids})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM (or ``queue`` jobs); returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["queue"]:
        return queue(arguments[1:])
    parser = argparse.ArgumentParser(
        prog="python -m ghalistener.testing.github",
        description="A simulated GitHub Enterprise Server with its runner scale-set service.",
        epilog=QUEUE_HELP,
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--hold", type=float, default=50.0, help="long-poll hold, seconds")
    parser.add_argument("--admin-token-ttl", type=float, default=3600.0)
    parser.add_argument("--scale-set", action="append", default=[], help="create at start")
    parser.add_argument(
        "--session-idle-timeout",
        type=float,
        default=DEFAULT_SESSION_IDLE_TIMEOUT,
        help="seconds before an unused message session is dropped; 0 = never",
    )
    parser.add_argument(
        "--runner-offline-delay",
        type=float,
        default=DEFAULT_RUNNER_OFFLINE_DELAY,
        help="seconds a runner whose process died is still listed online",
    )
    args = parser.parse_args(arguments)
    if args.session_idle_timeout < 0:
        parser.error("--session-idle-timeout must be 0 (never) or more seconds")
    if args.runner_offline_delay < 0:
        parser.error("--runner-offline-delay must be 0 or more seconds")

    simulator = GitHubSimulator(
        hold_seconds=args.hold,
        admin_token_ttl=args.admin_token_ttl,
        session_idle_timeout=args.session_idle_timeout or None,
        runner_offline_delay=args.runner_offline_delay,
    )
    for name in args.scale_set:
        simulator.create_scale_set(name)
    stop = threading.Event()
    stop_on_signals(stop)
    with serve(simulator, host=args.host, port=args.port) as server:
        print(f"ready {server.url}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
