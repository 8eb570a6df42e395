"""``python -m ersctl.testing.apiserver --port PORT --kubeconfig PATH [--no-crds] [--no-gc]
[--tls-cert-file F --tls-private-key-file F [--tls-ca-file F] [--client-ca-file F]]
[--token T]``: serve until SIGINT/SIGTERM; prints ``ready <url>`` once serving.

With a certificate it serves HTTPS; ``--client-ca-file`` and ``--token`` make it ask
every request for a client certificate that CA signed, or that bearer token (401
without), as a cluster does: for trying a client's credentials (the test suite's
existing-cluster mode with a token or a certificate kubeconfig). The kubeconfig it
writes names the CA of ``--tls-ca-file`` and carries the token; a certificate user
adds its own ``client-certificate-data`` and ``client-key-data``."""

from __future__ import annotations

import argparse
import ssl
import sys
import threading
from pathlib import Path

from ersctl.platform.interrupt import stop_on_signals
from ersctl.testing.apiserver.server import ApiServer
from ersctl.testing.apiserver.serving import Authentication, ServerTLS


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
        help="no garbage collection, no namespace deletion, no default ServiceAccounts "
        "(kube-controller-manager's jobs): a bare kube-apiserver, as envtest runs one",
    )
    tls = parser.add_argument_group("HTTPS and credentials (for trying a client's)")
    tls.add_argument("--tls-cert-file", type=Path, help="serve HTTPS with this certificate (PEM)")
    tls.add_argument("--tls-private-key-file", type=Path, help="its private key (PEM)")
    tls.add_argument(
        "--tls-ca-file", type=Path, help="the CA of that certificate, for the kubeconfig"
    )
    tls.add_argument(
        "--client-ca-file", type=Path, help="accept client certificates this CA signed (PEM)"
    )
    tls.add_argument("--token", help="accept this bearer token (and write it in the kubeconfig)")
    return parser.parse_args(argv)


def _access(args: argparse.Namespace) -> tuple[ServerTLS | None, Authentication | None]:
    """What the options ask for; OSError/ssl.SSLError for unreadable files."""
    tls = None
    if args.tls_cert_file is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert_file, args.tls_private_key_file)
        if args.client_ca_file is not None:
            context.load_verify_locations(cafile=args.client_ca_file)
            context.verify_mode = ssl.CERT_OPTIONAL
        ca_pem = args.tls_ca_file.read_text() if args.tls_ca_file is not None else ""
        tls = ServerTLS(context=context, ca_pem=ca_pem)
    if args.token is None and args.client_ca_file is None:
        return tls, None
    return tls, Authentication(
        token=args.token, client_certificates=args.client_ca_file is not None
    )


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    stop = threading.Event()
    stop_on_signals(stop)
    try:
        tls, authentication = _access(args)
    except (OSError, ssl.SSLError) as exc:
        print(f"error: cannot use the TLS files: {exc}", file=sys.stderr)
        return 2
    server = ApiServer(
        host=args.host,
        port=args.port,
        crds=not args.no_crds,
        gc=not args.no_gc,
        tls=tls,
        authentication=authentication,
    )
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        if args.kubeconfig is not None:
            server.write_kubeconfig(args.kubeconfig, token=args.token)
        print(f"ready {server.url}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
