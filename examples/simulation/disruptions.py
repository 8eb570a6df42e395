"""Runner Pods disrupted from outside: evicted, drained, or lost with their node.

What the soak does to running runner Pods, on top of the :class:`~simulation.pods.PodAgent`
that plays their kubelet and runner binary. Each disruption picks the oldest runner Pod
that runs (a drain only one without ``karpenter.sh/do-not-disrupt``, as Karpenter and the
cluster autoscaler respect it), kills its runner through :meth:`PodAgent.take_down` (its
job, if any, fails at the service and is recorded as injected), and then:

- :meth:`Disruptions.evict`: the kubelet evicts the Pod (phase Failed, reason Evicted,
  the runner container never terminated);
- :meth:`Disruptions.drain`: the Pod is deleted;
- :meth:`Disruptions.lose_node`: the Pod is deleted and stays terminating, as a Pod whose
  kubelet is gone does (a finalizer stands in for the kubelet that never confirms). Once
  its runner is gone, :meth:`Disruptions.step` lets it go, as the Pod garbage collector
  deletes the Pods of a node that was removed.

Each returns False when no runner Pod qualifies (the fault waits for one);
:meth:`Disruptions.apply` does the one a :class:`~simulation.faults.FaultKind` names.
"""

from __future__ import annotations

from typing import Final

from ersctl.api import ER_PLURAL
from ersctl.ephemeralrunner.pods import DISRUPTION_ANNOTATIONS
from simulation.cluster import NAMESPACE, Kubernetes, unless_gone
from simulation.faults import FaultKind
from simulation.pods import PodAgent

AT_A_RUNNER: Final = frozenset((FaultKind.POD_EVICTED, FaultKind.POD_DRAINED, FaultKind.NODE_LOST))
"""The faults :meth:`Disruptions.apply` does (each waits for a running runner Pod)."""
LOST_NODE_FINALIZER: Final = "simulation.example.com/lost-node"
"""Keeps a lost node's Pod terminating until its runner is gone."""
EVICTED: Final = {
    "phase": "Failed",
    "reason": "Evicted",
    "message": "The node was low on resource: memory.",
    "conditions": [{"type": "Ready", "status": "False"}],
}


class Disruptions:
    """Not thread-safe: the simulation's loop calls it, like the agent."""

    def __init__(self, *, api: Kubernetes, agent: PodAgent, namespace: str = NAMESPACE) -> None:
        self._api = api
        self._agent = agent
        self._namespace = namespace
        self._lost: set[str] = set()  # Pods (= runners) of a lost node, still terminating

    def apply(self, kind: FaultKind) -> bool:
        """Do the disruption of ``kind`` (one of :data:`AT_A_RUNNER`)."""
        disrupt = {
            FaultKind.POD_EVICTED: self.evict,
            FaultKind.POD_DRAINED: self.drain,
            FaultKind.NODE_LOST: self.lose_node,
        }[kind]
        return disrupt()

    def evict(self) -> bool:
        name = self._take_down()
        if name is None:
            return False
        with unless_gone():
            self._api.patch_object(
                "pods", self._namespace, name, {"status": EVICTED}, subresource="status"
            )
        return True

    def drain(self) -> bool:
        name = self._take_down(unprotected=True)
        if name is None:
            return False
        with unless_gone():
            self._api.delete_object("pods", self._namespace, name)
        return True

    def lose_node(self) -> bool:
        name = self._take_down()
        if name is None:
            return False
        with unless_gone():
            patch = {"metadata": {"finalizers": [LOST_NODE_FINALIZER]}}
            self._api.patch_object("pods", self._namespace, name, patch)
            self._api.delete_object("pods", self._namespace, name)
            self._lost.add(name)
        return True

    def step(self) -> None:
        """Let a lost node's Pod go once its runner is gone."""
        for name in list(self._lost):
            if self._api.get_object(ER_PLURAL, self._namespace, name) is None:
                with unless_gone():
                    self._api.patch_object(
                        "pods", self._namespace, name, {"metadata": {"finalizers": []}}
                    )
                self._lost.discard(name)

    def _take_down(self, *, unprotected: bool = False) -> str | None:
        """Kill the runner of the oldest running runner Pod (without the do-not-disrupt
        annotations when ``unprotected``); its name, or None when none qualifies."""
        victim = self._victim(unprotected=unprotected)
        if victim is None:
            return None
        uid, name = victim
        self._agent.take_down(uid)
        return name

    def _victim(self, *, unprotected: bool) -> tuple[str, str] | None:
        for uid, name in self._agent.running():
            pod = self._api.get_object("pods", self._namespace, name)
            meta = (pod or {}).get("metadata") or {}
            if pod is None or meta.get("uid") != uid or meta.get("deletionTimestamp"):
                continue
            annotations = meta.get("annotations") or {}
            if unprotected and any(
                annotations.get(k) == v for k, v in DISRUPTION_ANNOTATIONS.items()
            ):
                continue
            return uid, name
        return None
