"""Scale-set service clients for runners, from each runner's credentials Secret.

:class:`SecretRunnerServices` implements ``RunnerServices`` on the shared
``ersctl.credentials.ClientCache``: for an EphemeralRunner it reads the Secret named by
``spec.githubConfigSecret`` in the runner's namespace once per block and holds the
client for that Secret version and ``spec.githubConfigUrl``, so a rotated credential
takes effect at once, an unchanged one reuses its connection and tokens, and a
replaced client is closed when its last block ends. Every call is fenced by the leader
lease, as the controller's Kubernetes writes are.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ersctl.api import EphemeralRunner
from ersctl.credentials import ClientCache, ClientLease, secret_ref
from ersctl.runner.ports import RunnerService
from ghalistener.actions.types import JitConfig, RunnerReference


class _Service:
    """The ``RunnerService`` of one block: each call asks the fence first."""

    def __init__(self, lease: ClientLease, runner: EphemeralRunner) -> None:
        self._lease = lease
        self._key = runner.key

    def generate_jit_runner_config(
        self, scale_set_id: int, name: str, work_folder: str = "_work"
    ) -> JitConfig:
        client = self._lease.client(f"registering runner {self._key}")
        return client.generate_jit_runner_config(scale_set_id, name, work_folder)

    def get_runner_by_name(self, name: str) -> RunnerReference | None:
        return self._lease.client(f"looking up runner {name}").get_runner_by_name(name)

    def remove_runner(self, runner_id: int) -> None:
        action = f"removing runner {runner_id} of {self._key}"
        self._lease.client(action).remove_runner(runner_id)


class SecretRunnerServices(ClientCache):
    """See the module docstring: a ``ClientCache`` (same constructor) that hands out
    runner services. Thread-safe; :meth:`close` closes every client.

    ``fence`` is asked before every service call; False (the lease is lost) raises
    ``ersctl.errors.NotLeaderError`` instead of reaching GitHub.
    """

    @contextmanager
    def service_for(self, runner: EphemeralRunner) -> Iterator[RunnerService]:
        """See ``ersctl.runner.ports.RunnerServices.service_for``."""
        with self.lease(secret_ref(runner.namespace, runner.spec, prefix="spec")) as lease:
            yield _Service(lease, runner)
