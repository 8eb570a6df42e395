"""``python -m ersctl.testing.apiserver --port PORT --kubeconfig PATH [--no-crds] [--no-gc]``:
serve until SIGINT/SIGTERM; prints ``ready <url>`` once serving."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from ersctl.testing.apiserver.server import ApiServer


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ersctl.testing.apiserver",
        description="An embedded Kubernetes API server for tests and local trials.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    parser.add_argument("--kubeconfig", type=Path, help="write a kubeconfig for this server here")
    parser.add_argument("--no-crds", action="store_true", help="start without the project's CRDs")
    parser.add_argument(
        "--no-gc",
        action="store_true",
        help="no garbage collection and no namespace deletion (kube-controller-manager's "
        "jobs): a bare kube-apiserver, as envtest runs one",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    server = ApiServer(host=args.host, port=args.port, crds=not args.no_crds, gc=not args.no_gc)
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        if args.kubeconfig is not None:
            server.write_kubeconfig(args.kubeconfig)
        print(f"ready {server.url}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
