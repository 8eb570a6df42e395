"""Run the whole system once: servers, the real programs, the agent, a workload.

:func:`run_simulation` starts, in this process, the embedded Kubernetes API server (or,
with a kubeconfig, reaches an existing cluster through ``simulation.remote``) and the
GitHub simulator's HTTP server; creates the EphemeralRunnerSet and its credentials
Secret; starts ``ghalistener run`` and ``ersctl reconcile`` (or the benchmark's
baseline controller) as subprocesses through their command lines; then drives one
loop that queues the workload's jobs on time, fires the fault schedule, steps the
runner agent and samples the system, until every job is done and the set is back at
``min_runners`` (or the drain deadline passes). It returns the run's
:class:`~simulation.trace.Trace`; logs of both programs stay in ``workdir``. A Ctrl-C
stops both programs before it propagates as KeyboardInterrupt
(:class:`~simulation.processes.CtrlC`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from ersctl.api import (
    AL_PLURAL,
    ARS_PLURAL,
    ER_PLURAL,
    ERS_FINALIZER,
    ERS_PLURAL,
    AutoscalingRunnerSet,
    EphemeralRunner,
    EphemeralRunnerSet,
)
from ersctl.ephemeralrunner.phases import FailurePolicy
from ersctl.ephemeralrunnerset.failurepolicy import DEFAULT_TTL as DEFAULT_FAILED_RUNNER_TTL
from ersctl.ephemeralrunnerset.metrics import LISTENER_SELECTOR
from ersctl.testing.apiserver import ApiServer, RequestRecord
from ersctl.testing.podsim import RunnerPods
from simulation.agent import AgentTiming, RunnerAgent
from simulation.cluster import (
    ARS_NAME,
    ERS_NAME,
    NAMESPACE,
    DirectCluster,
    Kubernetes,
    ars_document,
    bucket,
    create_credentials,
    create_objects,
    runner_pod_spec,
    write_listener_config,
)
from simulation.disruptions import AT_A_RUNNER, Disruptions
from simulation.faults import Fault, FaultKind, fault_plan
from simulation.github_side import SCALE_SET_NAME, GitHubSide
from simulation.listeners import ListenerKubelet
from simulation.live import LiveLine, Progress
from simulation.pods import START_FAULTS, PodAgent, StartFault
from simulation.processes import CtrlC, Program, ProgramExited
from simulation.replicas import LeaseTiming, Replicas
from simulation.trace import (
    WRITE_VERBS,
    Failover,
    Mark,
    RunnerTrace,
    Sample,
    SoakTrace,
    Trace,
    count_traffic,
    write_kind,
)
from simulation.workload import JobArrival, WorkloadSpec, generate, last_finish

if TYPE_CHECKING:  # loaded only for a run on a cluster (run_simulation)
    from simulation.remote import RemoteCluster

DEFAULT_MAX_FAILURES = FailurePolicy().max_failures


@dataclass(frozen=True, kw_only=True)
class SimulationConfig:
    """One run. ``controller`` is the ``python -m`` module and command of the controller."""

    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    timing: AgentTiming = field(default_factory=AgentTiming)
    label: str = "ersctl"
    min_runners: int = 0
    max_runners: int = 30
    faults: bool = False
    long_poll: float = 1.0
    message_latency: float = 0.0
    """Seconds every long poll waits before the service looks at its queue: models the
    delay with which GitHub's job messages reach the listener."""
    drain_timeout: float = 30.0
    tick: float = 0.05
    sample_every: float = 0.2
    controller: tuple[str, ...] = ("ersctl", "reconcile")
    controller_env: Mapping[str, str] = field(default_factory=dict)
    runner_controller: bool = False
    """Run ersctl's EphemeralRunner controller too; the agent then only drives Pods."""
    autoscaling: bool = False
    """Apply an AutoscalingRunnerSet instead of a set and a listener: the controller
    registers the scale set and makes the set and the listener Pod, whose listener the
    simulation's kubelet runs (:class:`~simulation.listeners.ListenerKubelet`)."""
    controller_replicas: int = 1
    lease: LeaseTiming | None = None
    """Leader election for the controller replicas (needed for more than one)."""
    failed_runner_ttl: float | None = None
    """``ersctl reconcile --failed-runner-ttl`` (None: its default)."""
    runner_max_failures: int | None = None
    """``ersctl reconcile --runner-max-failures`` (None: its default)."""
    fault_schedule: tuple[Fault, ...] | None = None
    """These faults instead of ``--faults``' plan (the soak's, ``faults.soak_plan``)."""
    controller_options: tuple[str, ...] = ()
    """More ``ersctl reconcile`` options (the soak's short runner health timeouts)."""
    health_deadline: float = 0.0
    """The longest wait of the runner health rules the soak allows (its invariants' bound)."""
    listener_takeover: float = 0.0
    """The longest a killed listener's successor may take to hold the message session
    (the soak's invariants' bound)."""
    kubeconfig: Path | None = None
    """An existing cluster to run on (``simulation.remote``) instead of the embedded API
    server, in a fresh namespace removed at the end."""

    @property
    def schedule(self) -> tuple[Fault, ...]:
        if self.fault_schedule is not None:
            return self.fault_schedule
        return fault_plan(self.workload.window, autoscaling=self.autoscaling) if self.faults else ()


class Agent(Protocol):
    """What the loop needs from a runner agent (:class:`RunnerAgent` or :class:`PodAgent`)."""

    def step(self) -> None: ...

    def traces(self, *, origin: float) -> tuple[RunnerTrace, ...]: ...


def run_simulation(config: SimulationConfig, *, workdir: Path, live: LiveLine) -> Trace:
    """Run ``config`` end to end and return what happened (see the module docstring)."""
    workdir.mkdir(parents=True, exist_ok=True)
    github_side = GitHubSide(long_poll=config.long_poll, register=not config.autoscaling)
    remote: RemoteCluster | None = None
    namespace = NAMESPACE
    if config.kubeconfig is not None:
        # Imported for a cluster only: the Kubernetes client it loads (about 0.25 s of
        # CPU, half the start of a run) is never used on the embedded server.
        from simulation.remote import RemoteCluster, run_namespace

        remote, namespace = RemoteCluster(config.kubeconfig), run_namespace()
    with remote or ApiServer() as api, github_side as github, CtrlC() as ctrl_c:
        sim = _Simulation(
            config=config,
            api=api,
            namespace=namespace,
            github=github,
            workdir=workdir,
            live=live,
            ctrl_c=ctrl_c,
        )
        try:
            sim.start()
            sim.drained = sim.loop()
            sim.stuck = sim.being_deleted()
            # On a cluster the scale set is taken down whatever the faults: what the
            # system leaves there is what a user would find.
            if config.autoscaling and (config.schedule or remote is not None):
                sim.tear_down(timeout=config.drain_timeout)
        finally:
            sim.stop()
            if remote is not None:
                sim.namespace_left = tuple(remote.remove(namespace))
        return sim.trace()


class _Simulation:
    def __init__(
        self,
        *,
        config: SimulationConfig,
        api: Kubernetes,
        namespace: str,
        github: GitHubSide,
        workdir: Path,
        live: LiveLine,
        ctrl_c: CtrlC,
    ) -> None:
        self.config = config
        self.ctrl_c = ctrl_c
        self.api = api
        self.namespace = namespace
        self.namespace_left: tuple[str, ...] | None = None
        self.github = github
        self.workdir = workdir
        self.live = live
        self.jobs = generate(config.workload)
        self.faults = config.schedule
        self.drained = False
        self.stuck: tuple[str, ...] = ()
        self.leader_kills: list[tuple[float, str]] = []
        """(when, the identity killed) of every leader kill."""
        self.teardown: tuple[str, ...] | None = None
        self.origin = time.time()
        self.samples: list[Sample] = []
        self.marks: list[Mark] = []
        self.restarts: list[threading.Thread] = []
        self.agent = self._agent()
        self.disruptions = (
            Disruptions(api=api, agent=self.agent, namespace=self.namespace)
            if isinstance(self.agent, PodAgent)
            else None
        )
        kubeconfig = api.write_kubeconfig(workdir / "kubeconfig")
        self.ers_name = ERS_NAME
        self.applied_at: float | None = None
        self.kubelet = ListenerKubelet(
            api, kubeconfig=kubeconfig, workdir=workdir / "listener-pods", namespace=self.namespace
        )
        self.listener = Program(
            name="ghalistener",
            log_path=workdir / "ghalistener.log",
            args=[
                "ghalistener",
                "run",
                "--config",
                str(self._listener_config()),
                "--kubeconfig",
                str(kubeconfig),
            ],
        )
        self.controllers = Replicas(
            args=[
                *config.controller,
                "--kubeconfig",
                str(kubeconfig),
                "--namespace",
                self.namespace,
                "--metrics-addr",
                "0",
                # Explicit both ways: `ersctl reconcile` runs the runner controller by
                # default, and without it the simulation's agent plays its part.
                "--runner-controller" if config.runner_controller else "--no-runner-controller",
                *self._autoscaling_options(),
                *_failure_options(config),
                *config.controller_options,
            ],
            env=dict(config.controller_env),
            workdir=workdir,
            count=config.controller_replicas,
            # One controller, restarted by SIGKILL in --faults, runs without a Lease:
            # the new process would wait out the dead one's lease before working.
            lease=config.lease,
            namespace=self.namespace,
        )

    def _autoscaling_options(self) -> list[str]:
        if not self.config.autoscaling:
            return [
                "--no-autoscaling-runner-set-controller",
                "--no-listener-controller",
            ]
        # The listener Pods' image is only a name here (the kubelet runs ghalistener from
        # this checkout); their metrics servers would all want the same port.
        return ["--listener-image", "ghalistener:simulated", "--listener-metrics-addr", "0"]

    def _agent(self) -> Agent:
        if self.config.runner_controller:
            return PodAgent(
                api=self.api,
                pods=RunnerPods(self.api, namespace=self.namespace, connect=self.github.connect),
                service=self.github,
                timing=self.config.timing,
                job_duration=self.github.job_duration,
                clock=time.time,
                namespace=self.namespace,
            )
        return RunnerAgent(
            cluster=DirectCluster(self.api, self.namespace),
            service=self.github,
            timing=self.config.timing,
            job_duration=self.github.job_duration,
            clock=time.time,
        )

    # -- setup and teardown -------------------------------------------------------------

    def _listener_config(self) -> Path:
        return write_listener_config(
            self.workdir / "listener-config.json",
            config_url=self.github.config_url,
            token=self.github.token,
            scale_set_id=self.github.scale_set_id,
            min_runners=self.config.min_runners,
            max_runners=self.config.max_runners,
            namespace=self.namespace,
            session_retry_interval=1.0,
        )

    def start(self) -> None:
        if self.config.message_latency > 0:
            self.github.delay_messages(self.config.message_latency)
        if self.config.autoscaling:
            # The Lease's namespace too.
            create_credentials(self.api, token=self.github.token, namespace=self.namespace)
        self.controllers.start()
        if self.config.autoscaling:
            self.applied_at = time.time()
            self.api.create_object(
                ARS_PLURAL,
                ars_document(
                    config_url=self.github.config_url,
                    scale_set_name=SCALE_SET_NAME,
                    min_runners=self.config.min_runners,
                    max_runners=self.config.max_runners,
                    namespace=self.namespace,
                ),
            )
        else:
            create_objects(
                self.api,
                config_url=self.github.config_url,
                token=self.github.token,
                scale_set_id=self.github.scale_set_id,
                namespace=self.namespace,
            )
            self.listener.start()
        self._wait_until_ready(timeout=60.0)
        self.origin = time.time()

    def _wait_until_ready(self, *, timeout: float) -> None:
        """Until the controller has claimed the set (its finalizer) and the listener holds
        a message session, so job waits measure scaling, not interpreter start-up."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.ctrl_c.check()
            self.kubelet.step()
            if self.config.autoscaling:
                self._find_autoscaled_set()
            ers = EphemeralRunnerSet(
                self.api.get_object(ERS_PLURAL, self.namespace, self.ers_name) or {}
            )
            if ers.has_finalizer(ERS_FINALIZER) and self.github.has_session():
                return
            self._check_programs()
            time.sleep(0.05)
        raise ProgramExited(f"the programs were not ready after {timeout:.0f}s; see {self.workdir}")

    def _find_autoscaled_set(self) -> None:
        """The scale set id and the set's name, once the ARS controller made them."""
        ars = AutoscalingRunnerSet(self.api.get_object(ARS_PLURAL, self.namespace, ARS_NAME) or {})
        if ars.scale_set_id and not self.github.scale_set_id:
            self.github.use_scale_set(ars.scale_set_id)
        owned = [
            EphemeralRunnerSet(raw)
            for raw in self.api.list_objects(ERS_PLURAL, self.namespace)
            if any(ref.get("uid") == ars.uid for ref in raw["metadata"].get("ownerReferences", ()))
        ]
        if owned:
            self.ers_name = owned[0].name

    def stop(self) -> None:
        for thread in self.restarts:
            thread.join()
        self.kubelet.close()
        self.listener.stop()
        self.controllers.stop()
        self.live.close()

    # -- the loop -----------------------------------------------------------------------

    def loop(self) -> bool:
        """Run the workload and the faults; True once settled, False at the deadline."""
        queue = list(self.jobs)
        faults = list(self.faults)
        deadline = last_finish(self.jobs) + self.config.drain_timeout
        next_sample = 0.0
        while True:
            self.ctrl_c.check()
            now = time.time() - self.origin
            while queue and queue[0].at <= now:
                self._enqueue(queue.pop(0))
            for fault in [f for f in faults if f.at <= now]:
                # One that cannot land yet waits without holding back the ones after it
                # (they would all land at once when it does).
                if self._fire(fault, now):
                    faults.remove(fault)
            self._step_cluster()
            if now >= next_sample:
                next_sample = now + self.config.sample_every
                sample = self._sample(now)
                self.live.update(self._progress(sample))
                if not queue and not faults and self._settled(sample):
                    return True
            if now > deadline:
                self.live.note(f"drain deadline passed after {now:.1f}s; stopping")
                return False
            self._check_programs()
            time.sleep(self.config.tick)

    def _step_cluster(self) -> None:
        """Advance what plays the cluster: the runner agent, the disruptions' Pod garbage
        collection, the listener's kubelet."""
        self.agent.step()
        if self.disruptions is not None:
            self.disruptions.step()
        self.kubelet.step()

    def _enqueue(self, job: JobArrival) -> None:
        self.github.enqueue(job)

    def _settled(self, sample: Sample) -> bool:
        done = self.github.jobs_done() == len(self.jobs)
        at_min = sample.replicas == self.config.min_runners == sample.live_runners
        return done and at_min and all(not t.is_alive() for t in self.restarts)

    def _check_programs(self) -> None:
        if any(t.is_alive() for t in self.restarts):
            return
        if not self.config.autoscaling:  # else the listener is its Pod's, recreated
            self.listener.check_alive()
        self.controllers.check()

    # -- faults ---------------------------------------------------------------------------

    def _fire(self, fault: Fault, now: float) -> bool:
        """Inject ``fault``; False when it cannot land yet (no leader to kill)."""
        if fault.kind is FaultKind.LEADER_KILL:
            killed = self.controllers.kill_leader(self.api)
            if killed is None:
                return False
            self.leader_kills.append((time.time(), killed))
        if fault.kind in _AT_A_LISTENER and not self._listener_settled():
            return False
        if fault.kind in AT_A_RUNNER and not self._disrupt(fault.kind):
            return False  # no runner Pod runs yet to disrupt
        self.marks.append(Mark(at=round(now, 2), label=fault.label))
        self.live.note(f"[{now:5.1f}s] fault: {fault.label}")
        self._actions()[fault.kind]()
        return True

    def _actions(self) -> dict[FaultKind, Callable[[], object]]:
        return {
            FaultKind.LEADER_KILL: lambda: None,  # done in _fire, which may defer it
            FaultKind.LISTENER_KILL: self.kubelet.kill,
            FaultKind.API_5XX: lambda: self.api.inject_fault(code=500, times=5),
            FaultKind.WATCH_GONE: self._drop_watches,
            FaultKind.SESSION_LOST: self.github.drop_sessions,
            FaultKind.MESSAGE_REDELIVERY: self.github.redeliver,
            FaultKind.POD_START_FAILURE: lambda: self._pod_agent().fail_next_start(1),
            FaultKind.RUNNER_BROKEN: lambda: self._pod_agent().fail_next_start(
                self.config.runner_max_failures or DEFAULT_MAX_FAILURES
            ),
            FaultKind.POD_JOB_FAILURE: lambda: self._pod_agent().fail_a_busy_runner(),
            **{kind: lambda: None for kind in AT_A_RUNNER},  # done in _fire, which may defer
            **{kind: partial(self._disturb_start, start) for kind, start in START_FAULTS.items()},
            FaultKind.GITHUB_5XX: lambda: self.github.fail_next(code=503, times=2),
            FaultKind.TOKEN_EXPIRY: self.github.expire_tokens,
            FaultKind.API_CONFLICTS: lambda: self.api.inject_fault(
                verb="patch", resource=ERS_PLURAL, subresource="status", code=409, times=3
            ),
            FaultKind.API_LATENCY: lambda: self.api.inject_fault(latency=0.3, times=25),
            FaultKind.LISTENER_RESTART: self._restart_listener,
            FaultKind.CONTROLLER_RESTART: lambda: self._restart(
                self.controllers.programs[0], graceful=False
            ),
            FaultKind.TEMPLATE_EDIT: self._edit_template,
        }

    def _disrupt(self, kind: FaultKind) -> bool:
        """Evict, drain or lose the node of a running runner Pod; False when none runs."""
        if self.disruptions is None:
            raise ProgramExited("runner Pod faults need the runner controller's Pods")
        return self.disruptions.apply(kind)

    def _disturb_start(self, fault: StartFault) -> None:
        self._pod_agent().disturb_next_start(fault)

    def _pod_agent(self) -> PodAgent:
        if not isinstance(self.agent, PodAgent):
            raise ProgramExited("runner Pod faults need the runner controller's Pods")
        return self.agent

    def _drop_watches(self) -> None:
        """Every watch ends; enough of the re-watches get 410 Gone that informers relist."""
        self.api.inject_fault(verb="watch", code=410, times=8)
        self.api.drop_watches()

    def _listener_settled(self) -> bool:
        """Whether a listener kill or restart can land on a listener of its own: one runs
        (a kill during the previous one's restart backoff killed nothing, yet was marked).
        A template edit does not restart the listener, so it cannot swallow a restart."""
        if not self.config.autoscaling:
            return True
        return bool(self.kubelet.running())

    def _edit_template(self) -> None:
        """What a platform team's edit of the runner template does: the ARS controller
        advances the set's revision, idle runners are rebuilt, busy ones keep their job;
        the listener keeps running."""
        env = [{"name": "SIMULATED_TEMPLATE_EDIT", "value": "1"}]
        container = {**runner_pod_spec()["containers"][0], "env": env}
        patch = {"spec": {"template": {"spec": {"containers": [container]}}}}
        self.api.patch_object(ARS_PLURAL, self.namespace, ARS_NAME, patch)

    def tear_down(self, *, timeout: float) -> None:
        """Delete the AutoscalingRunnerSet and wait until nothing of it is left in the
        cluster or at GitHub; what is still there then is recorded (``self.teardown``)."""
        self.api.delete_object(ARS_PLURAL, self.namespace, ARS_NAME)
        deadline = time.time() + timeout
        while True:
            self.ctrl_c.check()
            self._step_cluster()
            left = self._left_over()
            if not left or time.time() > deadline:
                self.teardown = left
                return
            self._check_programs()
            time.sleep(self.config.tick)

    def being_deleted(self) -> tuple[str, ...]:
        """Objects in the namespace still carrying a deletionTimestamp (stuck finalizers
        once the run has drained)."""
        return tuple(
            f"{plural}/{obj['metadata']['name']}"
            for plural in (ARS_PLURAL, ERS_PLURAL, ER_PLURAL, AL_PLURAL, "pods", "secrets")
            for obj in self.api.list_objects(plural, self.namespace)
            if obj["metadata"].get("deletionTimestamp")
        )

    def _left_over(self) -> tuple[str, ...]:
        left = [
            f"{plural}/{obj['metadata']['name']}"
            for plural in (ARS_PLURAL, ERS_PLURAL, ER_PLURAL, AL_PLURAL, "pods")
            for obj in self.api.list_objects(plural, self.namespace)
        ]
        left += [f"scale set {name} at GitHub" for name in self.github.scale_set_names()]
        return tuple(left)

    def _restart_listener(self) -> None:
        """SIGTERM and start the listener; with an AutoscalingRunnerSet, delete its Pod:
        the listener controller makes another (after its restart backoff)."""
        if not self.config.autoscaling:
            self._restart(self.listener, graceful=True)
            return
        for pod in self.api.list_objects("pods", self.namespace, label_selector=LISTENER_SELECTOR):
            self.api.delete_object("pods", self.namespace, pod["metadata"]["name"])

    def _restart(self, program: Program, *, graceful: bool) -> None:
        thread = threading.Thread(
            target=program.restart,
            kwargs={"graceful": graceful},
            name=f"restart-{program.name}",
            daemon=True,
        )
        self.restarts = [t for t in self.restarts if t.is_alive()] + [thread]
        thread.start()

    # -- observation ----------------------------------------------------------------------

    def _sample(self, now: float) -> Sample:
        raw = self.api.get_object(ERS_PLURAL, self.namespace, self.ers_name) or {}
        ers = EphemeralRunnerSet(raw)
        phases = {"pending": 0, "running": 0, "finished": 0, "deleting": 0}
        for obj in self.api.list_objects(ER_PLURAL, self.namespace):
            phases[bucket(EphemeralRunner(obj))] += 1
        sample = Sample(
            at=round(now, 3),
            assigned_jobs=self.github.assigned_jobs(),
            replicas=ers.replicas,
            patch_id=ers.patch_id,
            marker=ers.finished_runner_cleanup_patch_id,
            **phases,
        )
        self.samples.append(sample)
        return sample

    def _progress(self, sample: Sample) -> Progress:
        queued, running, done = self.github.job_counts()
        return Progress(
            elapsed=sample.at,
            jobs_total=len(self.jobs),
            jobs_queued=queued,
            jobs_running=running,
            jobs_done=done,
            pending=sample.pending,
            running=sample.running,
            finished=sample.finished,
            deleting=sample.deleting,
            replicas=sample.replicas,
            patch_id=sample.patch_id,
            marker=sample.marker,
        )

    def trace(self) -> Trace:
        final = self.samples[-1] if self.samples else None
        records = self.api.request_log.records()
        requests = [
            (r.verb or "other", "/".join(filter(None, (r.resource, r.subresource))) or r.path)
            for r in records
        ]
        deleted = frozenset(
            r.name
            for r in records
            if r.verb == "delete" and r.resource == ER_PLURAL and r.name and r.status < 300
        )
        return Trace(
            label=self.config.label,
            seed=self.config.workload.seed,
            min_runners=self.config.min_runners,
            max_runners=self.config.max_runners,
            elapsed=time.time() - self.origin,
            jobs=self.github.job_traces(origin=self.origin),
            runners=self.agent.traces(origin=self.origin),
            samples=tuple(self.samples),
            api=count_traffic(
                requests,
                write_kinds=(_write_kind(r) for r in records),
                refused_writes=sum(1 for r in records if r.verb in WRITE_VERBS and r.status >= 400),
            ),
            marks=tuple(self.marks),
            teardown=self.teardown,
            cluster=None if self.namespace_left is None else (self.namespace, self.namespace_left),
            setup=None if self.applied_at is None else self.origin - self.applied_at,
            final_replicas=final.replicas if final else 0,
            final_runners=final.live_runners if final else 0,
            deleted_in_log=deleted,
            soak=self._soak_trace(records) if self.config.fault_schedule is not None else None,
        )

    def _soak_trace(self, records: list[RequestRecord]) -> SoakTrace:
        pods = self.agent if isinstance(self.agent, PodAgent) else None
        lease = self.config.lease
        return SoakTrace(
            failed_jobs=frozenset(
                self.github.job_name(job) for _, job in (pods.failed_jobs if pods else ())
            ),
            injected_runners=frozenset(pods.injected_runners if pods else ()),
            failed_runner_ages=tuple(sorted(pods.failed_ages.items()) if pods else ()),
            failovers=tuple(
                failover(records, killed_at=at, killed=identity, origin=self.origin)
                for at, identity in self.leader_kills
            ),
            stuck=self.stuck,
            replica_exits=tuple(self.controllers.exits),
            drained=self.drained,
            failed_runner_ttl=self.config.failed_runner_ttl or DEFAULT_FAILED_RUNNER_TTL,
            lease_duration=float(lease.duration) if lease else 0.0,
            zombie_ages=tuple(sorted(pods.zombie_ages.items()) if pods else ()),
            health_deadline=self.config.health_deadline,
            listener_takeover=self.config.listener_takeover,
        )


_AT_A_LISTENER: Final = frozenset((FaultKind.LISTENER_KILL, FaultKind.LISTENER_RESTART))
"""Faults that wait for :meth:`_Simulation._listener_settled`."""


def _failure_options(config: SimulationConfig) -> list[str]:
    options = []
    if config.failed_runner_ttl is not None:
        options += ["--failed-runner-ttl", str(config.failed_runner_ttl)]
    if config.runner_max_failures is not None:
        options += ["--runner-max-failures", str(config.runner_max_failures)]
    return options


def failover(
    records: list[RequestRecord], *, killed_at: float, killed: str, origin: float
) -> Failover:
    """The takeover after the leader ``killed`` was killed at ``killed_at`` (epoch
    seconds), from the request log: the first Lease write naming another holder, then the
    first controller write after it; times since ``origin``."""
    acquired = next(
        (
            r.at
            for r in records
            if r.at > killed_at and r.resource == "leases" and _holder(r) not in ("", killed)
        ),
        None,
    )
    first_write = (
        None
        if acquired is None
        else next(
            (
                r.at
                for r in records
                if r.at > acquired
                and r.status < 300
                and r.resource not in ("leases", "events")
                and _write_kind(r) not in (None, "listener patches")
            ),
            None,
        )
    )
    return Failover(
        killed_at=round(killed_at - origin, 3),
        acquired_at=None if acquired is None else round(acquired - origin, 3),
        first_write_at=None if first_write is None else round(first_write - origin, 3),
    )


def _holder(record: RequestRecord) -> str:
    """The holder a successful Lease write (create, update, patch) names; "" otherwise."""
    if record.status >= 300 or record.verb not in ("create", "update", "patch"):
        return ""
    try:
        body = json.loads(record.body) if record.body else {}
    except ValueError:
        return ""
    spec = body.get("spec") if isinstance(body, dict) else None
    return str((spec or {}).get("holderIdentity") or "") if isinstance(spec, dict) else ""


def _write_kind(record: RequestRecord) -> str | None:
    try:
        body = json.loads(record.body) if record.body else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict | list):
        body = {}
    return write_kind(record.verb, record.resource, record.subresource, body)
