"""The controller's replicas: ``ersctl reconcile`` processes, at most one leading.

Without leader election (``simulate.py``) there is one replica, and a replica that exits
on its own ends the run (:class:`~simulation.processes.ProgramExited`). With it (the
soak), :class:`Replicas` runs them as a Deployment would: each holds the Lease in turn,
and a replica that exits, killed or having lost the Lease, is started again and noted.

Which replica leads is read from the Lease (``spec.holderIdentity``) and from each
replica's log, where ``ersctl.kube.leader`` writes "acquired lease NS/NAME as IDENTITY".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simulation.cluster import Kubernetes
from simulation.processes import START_MARKER, Program

LEASE_NAME = "ersctl-leader"
_ACQUIRED = re.compile(rb"acquired lease \S+ as (\S+)")


@dataclass(frozen=True, kw_only=True)
class LeaseTiming:
    """``ersctl reconcile``'s leader election timing (seconds), short for a soak: a
    SIGKILLed leader's Lease expires ``duration`` after its last renewal."""

    duration: int = 5
    renew_deadline: float = 4.0
    retry_period: float = 1.0

    def options(self, namespace: str) -> list[str]:
        return [
            "--leader-elect",
            "--lease-namespace",
            namespace,
            "--lease-name",
            LEASE_NAME,
            "--lease-duration",
            str(self.duration),
            "--renew-deadline",
            str(self.renew_deadline),
            "--retry-period",
            str(self.retry_period),
        ]


class Replicas:
    """``count`` replicas of one controller command line, logs ``controller[-N].log``."""

    def __init__(
        self,
        *,
        args: list[str],
        env: dict[str, str],
        workdir: Path,
        count: int,
        lease: LeaseTiming | None,
        namespace: str,
    ) -> None:
        if count > 1 and lease is None:
            raise ValueError("more than one controller replica needs leader election")
        self.lease = lease
        self._namespace = namespace
        election = lease.options(namespace) if lease else ["--no-leader-elect"]
        self.programs = [
            Program(
                name="controller" if count == 1 else f"controller-{index + 1}",
                log_path=workdir
                / ("controller.log" if count == 1 else f"controller-{index + 1}.log"),
                args=[*args, *election],
                env=env,
            )
            for index in range(count)
        ]
        self.exits: list[str] = []
        """``name exited with code C`` for every exit the injector did not cause."""

    def start(self) -> None:
        for program in self.programs:
            program.start()

    def stop(self) -> None:
        for program in self.programs:
            program.stop()

    def check(self) -> None:
        """Without leader election: raise ProgramExited when the replica exited. With it:
        start an exited replica again (as its Deployment would), noting the exit."""
        for program in self.programs:
            if self.lease is None:
                program.check_alive()
            elif program.exit_code is not None:
                self.exits.append(f"{program.name} exited with code {program.exit_code}")
                program.restart(graceful=True)  # it has exited: nothing left to signal

    def holder(self, api: Kubernetes) -> str:
        """The Lease's holder identity now ("" when none)."""
        lease = api.get_object("leases", self._namespace, LEASE_NAME) or {}
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    def leader(self, api: Kubernetes) -> tuple[Program, str] | None:
        """The running replica holding the Lease, and its identity; None when none does."""
        holder = self.holder(api)
        for program in self.programs:
            if holder and program.exit_code is None and _identity(program.log_path) == holder:
                return program, holder
        return None

    def kill_leader(self, api: Kubernetes) -> str | None:
        """SIGKILL the leading replica and start it again (a new process, a new identity);
        returns the identity killed, or None when no running replica leads now."""
        found = self.leader(api)
        if found is None:
            return None
        program, identity = found
        program.restart(graceful=False)
        return identity


def _identity(log_path: Path) -> str:
    """The identity the replica's current process acquired the Lease as: its "acquired
    lease" line after the log's latest start marker ("" when it has not led yet; a
    killed predecessor's identity must not be taken for the new process's)."""
    try:
        text = log_path.read_bytes()
    except OSError:
        return ""
    current = text[text.rfind(START_MARKER) :]
    found = _ACQUIRED.findall(current)
    return found[-1].decode() if found else ""
