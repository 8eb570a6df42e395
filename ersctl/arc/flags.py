"""Every flag of ARC 0.14.2's and 0.15.1's manager (controller-runtime's ``--kubeconfig``
included), and what ersctl makes of it. Each is one of:

- *mapped*: ersctl does what ARC does with it (``meaning``; ``option`` the
  ``ersctl reconcile`` option it becomes). A flag not given takes ARC's default, not
  ersctl's (leader election off, a 1-minute resync, debug logs, the health probes on
  ``:8081``, the client rate limit of 20/s, ...);
- *no effect in scale-set mode*: the flags of ARC's legacy ``actions.summerwind.net``
  controllers, which ARC itself ignores under ``--auto-scaling-runner-set-only``;
- *refused* (``refuse``) where ersctl cannot honour the value: ARC's legacy mode
  (``--auto-scaling-runner-set-only`` missing or false), a second watched namespace,
  the ``eventual`` update strategy, a pprof server, reading the GitHub Secret from the
  controller's namespace. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ersctl.platform.goflags import Kind

ARC_014: Final = "0.14.2"
ARC_015: Final = "0.15.1"
BOTH: Final = (ARC_014, ARC_015)


@dataclass(frozen=True)
class ArcFlag:
    """One flag of ARC's manager and what ersctl makes of it."""

    name: str
    kind: Kind
    default: object
    """ARC's default (the newest line's where they differ)."""
    lines: tuple[str, ...]
    """The ARC versions whose manager defines it."""
    meaning: str
    """What ersctl does with it (README: "ARC flag -> ersctl behaviour")."""
    option: str | None = None
    """The ``ersctl reconcile`` option it becomes; None: no effect in scale-set mode."""
    convert: Callable[[object], list[str]] | None = None
    """Value -> that option's arguments (default: ``[option, str(value)]``)."""
    refuse: Callable[[object], str | None] | None = None
    """Value -> why ersctl cannot honour it, or None."""
    alias_of: str | None = None
    """Another name (another ARC version's) of the flag named here."""

    def arguments(self, value: object) -> list[str]:
        """The ``ersctl reconcile`` arguments for ``value`` (after :attr:`refuse`)."""
        if self.option is None:
            return []
        if self.convert is not None:
            return self.convert(value)
        return [self.option, str(value)]


def _bool_option(on: str, off: str) -> Callable[[object], list[str]]:
    return lambda value: [on if value else off]


def _seconds(value: object) -> list[str]:
    return ["--resync-period", f"{float(value):g}"]  # type: ignore[arg-type]


def _unless_set(value: object, reason: str) -> str | None:
    return reason if value else None


def _names(option: str) -> Callable[[object], list[str]]:
    # The chart joins several pull Secrets with commas into one value (a Kubernetes
    # name has none); each becomes one listener imagePullSecret.
    return lambda value: [
        arg for name in str(value).split(",") if name.strip() for arg in (option, name.strip())
    ]


def _if_given(option: str) -> Callable[[object], list[str]]:
    return lambda value: [option, str(value)] if value else []


def _too_fast(value: object) -> str | None:
    seconds = float(value)  # type: ignore[arg-type]
    return None if seconds >= 1 else f"{seconds:g}s: ersctl resyncs at most once a second"


def _update_strategy(value: object) -> str | None:
    if value == "eventual":
        return (
            "'eventual' (wait for every job before applying a scale set's change) is not "
            "ersctl's: it rebuilds idle runners at once and lets busy ones finish; use "
            "'immediate'"
        )
    return None


def _rate_limiter(value: object) -> str | None:
    if value in ("", "typed_rate_limiter"):
        return None
    return f"{value!r}: ersctl's work queues back off per object ('typed_rate_limiter')"


def _legacy(name: str, kind: Kind, default: object) -> ArcFlag:
    return ArcFlag(
        name,
        kind,
        default,
        BOTH,
        "No effect: ARC's legacy (actions.summerwind.net) controllers only, which ARC "
        "does not run with --auto-scaling-runner-set-only either.",
    )


FLAGS: Final[tuple[ArcFlag, ...]] = (
    ArcFlag(
        "auto-scaling-runner-set-only",
        Kind.BOOL,
        False,
        BOTH,
        "Required (ARC's chart passes it): ersctl runs ARC's scale-set mode only.",
        refuse=lambda v: (
            None
            if v
            else (
                "missing or false: ARC's legacy mode (actions.summerwind.net runners) is not "
                "ersctl's; pass --auto-scaling-runner-set-only, as ARC's chart does"
            )
        ),
    ),
    ArcFlag(
        "enable-leader-election",
        Kind.BOOL,
        False,
        BOTH,
        "--leader-elect (ARC's default: off; the chart turns it on for 2+ replicas).",
        "--leader-elect",
        _bool_option("--leader-elect", "--no-leader-elect"),
    ),
    ArcFlag(
        "leader-election-id",
        Kind.STRING,
        "actions-runner-controller",
        BOTH,
        "--lease-name: the Lease, in the controller's namespace (ARC's, so ARC and "
        "ersctl replicas exclude each other during a switch).",
        "--lease-name",
    ),
    ArcFlag(
        "metrics-addr",
        Kind.STRING,
        ":8080",
        BOTH,
        "--metrics-addr: /metrics (with the probes); 0 turns it off.",
        "--metrics-addr",
    ),
    ArcFlag(
        "health-probe-bind-address",
        Kind.STRING,
        ":8081",
        BOTH,
        "--health-probe-bind-address: /healthz and /readyz (the chart's probes, port 8081).",
        "--health-probe-bind-address",
    ),
    ArcFlag(
        "listener-metrics-addr",
        Kind.STRING,
        ":8080",
        BOTH,
        "--listener-metrics-addr: each listener's metrics server; 0 turns it off.",
        "--listener-metrics-addr",
    ),
    ArcFlag(
        "listener-metrics-endpoint",
        Kind.STRING,
        "/metrics",
        BOTH,
        "--listener-metrics-endpoint.",
        "--listener-metrics-endpoint",
    ),
    ArcFlag(
        "log-level",
        Kind.STRING,
        "debug",
        BOTH,
        "--log-level (debug, info, warn, error; the listeners get it too, as in ARC).",
        "--log-level",
    ),
    ArcFlag(
        "log-format",
        Kind.STRING,
        "text",
        BOTH,
        "--log-format (text, json; the listeners get it too).",
        "--log-format",
    ),
    ArcFlag(
        "sync-period",
        Kind.DURATION,
        60.0,
        BOTH,
        "--resync-period: every object reconciled again this often (at least 1s).",
        "--resync-period",
        _seconds,
        _too_fast,
    ),
    ArcFlag(
        "runner-max-concurrent-reconciles",
        Kind.INT,
        4,
        (ARC_014,),
        "0.14's name of --ephemeral-runner-max-concurrent-reconciles.",
        alias_of="ephemeral-runner-max-concurrent-reconciles",
    ),
    ArcFlag(
        "ephemeral-runner-max-concurrent-reconciles",
        Kind.INT,
        4,
        (ARC_015,),
        "--ephemeral-runner-max-concurrent-reconciles: EphemeralRunner workers.",
        "--ephemeral-runner-max-concurrent-reconciles",
    ),
    ArcFlag(
        "ephemeral-runner-set-max-concurrent-reconciles",
        Kind.INT,
        2,
        (ARC_015,),
        "--ephemeral-runner-set-max-concurrent-reconciles: EphemeralRunnerSet workers.",
        "--ephemeral-runner-set-max-concurrent-reconciles",
    ),
    ArcFlag(
        "autoscaling-runner-set-max-concurrent-reconciles",
        Kind.INT,
        2,
        (ARC_015,),
        "--autoscaling-runner-set-max-concurrent-reconciles: AutoscalingRunnerSet workers.",
        "--autoscaling-runner-set-max-concurrent-reconciles",
    ),
    ArcFlag(
        "autoscaling-listener-max-concurrent-reconciles",
        Kind.INT,
        2,
        (ARC_015,),
        "--autoscaling-listener-max-concurrent-reconciles: AutoscalingListener workers.",
        "--autoscaling-listener-max-concurrent-reconciles",
    ),
    ArcFlag(
        "k8s-client-rate-limiter-qps",
        Kind.INT,
        20,
        BOTH,
        "--k8s-client-rate-limiter-qps: requests per second to the API server.",
        "--k8s-client-rate-limiter-qps",
    ),
    ArcFlag(
        "k8s-client-rate-limiter-burst",
        Kind.INT,
        30,
        BOTH,
        "--k8s-client-rate-limiter-burst: requests at once above that rate.",
        "--k8s-client-rate-limiter-burst",
    ),
    ArcFlag(
        "workqueue-rate-limiter",
        Kind.STRING,
        "",
        BOTH,
        "Accepted: '' and 'typed_rate_limiter' (per-object backoff, what ersctl's queues "
        "do); other values refused. ARC's default adds an overall 10/s bucket, ersctl's "
        "queues do not.",
        refuse=_rate_limiter,
    ),
    ArcFlag(
        "update-strategy",
        Kind.STRING,
        "immediate",
        BOTH,
        "immediate: ersctl's way (idle runners rebuilt from a changed template, busy "
        "ones finish); eventual: refused; another value: immediate with a warning, as ARC.",
        refuse=_update_strategy,
    ),
    ArcFlag(
        "watch-namespace",
        Kind.STRING,
        "",
        BOTH,
        "--namespace: only this namespace (it must be the controller's, where the "
        "listeners are, as in ARC).",
        "--namespace",
        _if_given("--namespace"),
    ),
    ArcFlag(
        "watch-single-namespace",
        Kind.STRING,
        "",
        BOTH,
        "Refused when set: ersctl watches one namespace or all, ARC's single-namespace "
        "mode two (the runners' and the controller's).",
        refuse=lambda v: _unless_set(
            v, f"{v!r}: ersctl watches one namespace or all, not two; drop it"
        ),
    ),
    ArcFlag(
        "exclude-label-propagation-prefix",
        Kind.LIST,
        (),
        BOTH,
        "--exclude-label-propagation-prefix: AutoscalingRunnerSet labels with this "
        "prefix are not copied to what it makes.",
        "--exclude-label-propagation-prefix",
    ),
    ArcFlag(
        "auto-scaler-image-pull-secrets",
        Kind.LIST,
        (),
        BOTH,
        "--listener-image-pull-secret (one per comma-separated name): the listener "
        "Pods' imagePullSecrets, where the listener names none.",
        "--listener-image-pull-secret",
        _names("--listener-image-pull-secret"),
    ),
    ArcFlag(
        "read-github-config-secret-from-controller-namespace",
        Kind.BOOL,
        False,
        BOTH,
        "Refused when true: ersctl reads a scale set's GitHub Secret in its own namespace.",
        refuse=lambda v: _unless_set(v, "true: ersctl reads it in the scale set's namespace"),
    ),
    ArcFlag(
        "pprof-addr",
        Kind.STRING,
        "",
        BOTH,
        "Refused when set: Go's profiler; ersctl is not a Go program.",
        refuse=lambda v: _unless_set(v, f"{v!r}: ersctl has no Go profiler to serve"),
    ),
    ArcFlag(
        "kubeconfig",
        Kind.STRING,
        "",
        BOTH,
        "--kubeconfig (controller-runtime's flag; in a Pod the service account is used).",
        "--kubeconfig",
        _if_given("--kubeconfig"),
    ),
    ArcFlag(
        "port",
        Kind.INT,
        9443,
        BOTH,
        "No effect: the admission webhook port of ARC's legacy mode (no webhook runs in "
        "scale-set mode, in ARC either).",
    ),
    _legacy("runner-image", Kind.STRING, "summerwind/actions-runner:latest"),
    _legacy("docker-image", Kind.STRING, "docker:dind"),
    _legacy("docker-gid", Kind.STRING, "1001"),
    _legacy("runner-image-pull-secret", Kind.LIST, ()),
    _legacy("docker-registry-mirror", Kind.STRING, ""),
    _legacy("github-token", Kind.STRING, ""),
    _legacy("github-enterprise-url", Kind.STRING, ""),
    _legacy("github-app-id", Kind.INT, 0),
    _legacy("github-app-installation-id", Kind.INT, 0),
    _legacy("github-app-private-key", Kind.STRING, ""),
    _legacy("github-url", Kind.STRING, ""),
    _legacy("github-upload-url", Kind.STRING, ""),
    _legacy("github-basicauth-username", Kind.STRING, ""),
    _legacy("github-basicauth-password", Kind.STRING, ""),
    _legacy("runner-github-url", Kind.STRING, ""),
    _legacy("runner-status-update-hook", Kind.BOOL, False),
    _legacy("default-scale-down-delay", Kind.DURATION, 600.0),
    _legacy("common-runner-labels", Kind.LIST, ()),
)
"""Every flag of ARC 0.14.2's and 0.15.1's manager (controller-runtime's
``--kubeconfig`` included), in the order of the README's table."""

BY_NAME: Final = {flag.name: flag for flag in FLAGS}
