"""A local cluster to try the deployment with kubectl (README, "Run on Kubernetes"), with
no cluster and no GitHub account.

    python examples/local_cluster.py [--workdir DIR] [--job-seconds 10]

Starts, in this process:

- the embedded Kubernetes API server with its controllers (garbage collection,
  namespaces, a ServiceAccount ``default`` in each), without the project's CRDs: the
  install applies them, as on a real cluster;
- the Deployment and ReplicaSet controllers (``simulation.workloads``), so the
  controller Deployment has its Pods and ``kubectl rollout status`` follows them;
- a kubelet that runs this checkout's programs for the Pods: the controller
  Deployment's (``ersctl reconcile`` as its manifest says, ``simulation.kubelet``), the
  listener Pods the controller makes (the real ``ghalistener``,
  ``simulation.listeners``) and the runner Pods (played against the simulator, each
  runner working ``--job-seconds`` on a job, ``simulation.pods``); no image is pulled
  or built;
- the GitHub simulator, whose organization URL the scale set names.

Then it prints the kubeconfig to export, the URL to fill in, and the command that queues
jobs (``python -m ghalistener.testing.github queue``), and runs until Ctrl-C (or
SIGTERM), which stops every program it started. Logs of the Pods' programs go to the
work directory. Exit code 0; 2 for a bad option.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path

from simulation.options import Parser, number, workdir_path

from ersctl.platform.interrupt import stop_on_signals

PROG = "local_cluster.py"
TICK = 0.2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(
        prog=PROG,
        description="A local cluster to try the deployment with kubectl.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--workdir",
        metavar="DIR",
        type=workdir_path,
        help="kubeconfig and logs (default: a temp dir)",
    )
    parser.add_argument(
        "--job-seconds", type=number(above=0), default=10.0, help="how long a runner works on a job"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from simulation.github_side import GitHubSide
    from simulation.kubelet import ProgramKubelet, RunnerKubelets, listener_config_on_host
    from simulation.listeners import ListenerKubelet
    from simulation.workloads import Workloads

    from ersctl.testing.apiserver import ApiServer

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="gha-local-cluster-"))
    workdir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    stop_on_signals(stop)
    with ApiServer(crds=False) as api, GitHubSide(long_poll=10.0, register=False) as github:
        kubeconfig = api.write_kubeconfig(workdir / "kubeconfig")
        kubelets = (
            ProgramKubelet(api, kubeconfig=kubeconfig, workdir=workdir / "pods"),
            ListenerKubelet(
                api,
                kubeconfig=kubeconfig,
                workdir=workdir / "listener-pods",
                on_host=listener_config_on_host,
            ),
        )
        workloads = Workloads(api)
        runners = RunnerKubelets(api, github, job_seconds=args.job_seconds)
        _print_ready(kubeconfig, github.config_url, github.config_url.rsplit("/", 1)[0], workdir)
        try:
            while not stop.wait(TICK):
                workloads.step()
                for kubelet in kubelets:
                    kubelet.step()
                runners.step()
        finally:
            for kubelet in kubelets:
                kubelet.close()
    print("stopped", flush=True)
    return 0


def _print_ready(kubeconfig: Path, config_url: str, simulator: str, workdir: Path) -> None:
    print(
        f"""local cluster ready
  kubeconfig   export KUBECONFIG={kubeconfig}
  GitHub       {config_url}
               (the githubConfigUrl to fill in; any token will do)
  queue jobs   python -m ghalistener.testing.github queue --url {simulator} --scale-set arc-runners --count 3
  logs         {workdir}
Ctrl-C stops it.""",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
