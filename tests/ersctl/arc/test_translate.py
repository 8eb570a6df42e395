"""Every flag of ARC's manager is accepted by ``/manager`` with ARC's meaning, or refused
in one line naming it (``ersctl.arc``).

The flag lists are transcribed here on their own, from ARC's ``main.go`` (the version the
code index holds: the listener and controller metrics, leader election, the legacy
``actions.summerwind.net`` flags, the scale-set flags), controller-runtime's
``--kubeconfig``, and the flags later PRs added: #4449 ``--pprof-addr``, #4451
``--workqueue-rate-limiter``, #4459 ``--health-probe-bind-address`` (0.14.2), #4626 and
#4670 (0.15: four per-controller ``--*-max-concurrent-reconciles`` in place of
``--runner-max-concurrent-reconciles``). Each comes with a value of its Go type and what
ersctl must make of it: the ``ersctl reconcile`` arguments it becomes (checked to be
options that command defines), nothing but a warning (no effect in ARC's scale-set mode
either), or a refusal naming it. A flag ersctl drops fails here as "not defined".
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from ersctl.arc import flags as arc_flags
from ersctl.arc import translate as arc_translate
from ersctl.cli import main as ersctl_main
from ersctl.platform.errors import ConfigError
from ersctl.platform.goflags import GoFlagError

ENV: Final = {
    "CONTROLLER_MANAGER_POD_NAMESPACE": "arc-systems",
    "CONTROLLER_MANAGER_CONTAINER_IMAGE": "ghcr.io/actions/gha-runner-scale-set-controller:0.15.1",
}
BASE: Final = ["--auto-scaling-runner-set-only"]
WARN: Final = "warn"
REFUSED: Final = "refused"

# (flag, its Go type, a value) -> the reconcile arguments, WARN or REFUSED.
BOTH_LINES: Final[list[tuple[str, str, str | None, object]]] = [
    ("auto-scaling-runner-set-only", "bool", None, ()),
    ("listener-metrics-addr", "string", ":9090", ("--listener-metrics-addr", ":9090")),
    ("listener-metrics-endpoint", "string", "/m", ("--listener-metrics-endpoint", "/m")),
    ("metrics-addr", "string", ":9091", ("--metrics-addr", ":9091")),
    ("enable-leader-election", "bool", None, ("--leader-elect",)),
    ("leader-election-id", "string", "arc-le", ("--lease-name", "arc-le")),
    ("runner-image", "string", "img", WARN),
    ("docker-image", "string", "dind", WARN),
    ("docker-gid", "string", "121", WARN),
    ("runner-image-pull-secret", "var", "pull", WARN),
    ("docker-registry-mirror", "string", "mirror", WARN),
    ("github-token", "string", "ghp_NEVERLOGGED", WARN),
    ("github-enterprise-url", "string", "https://ghes", WARN),
    ("github-app-id", "int64", "12", WARN),
    ("github-app-installation-id", "int64", "34", WARN),
    ("github-app-private-key", "string", "/key.pem", WARN),
    ("github-url", "string", "https://github.example", WARN),
    ("github-upload-url", "string", "https://uploads", WARN),
    ("github-basicauth-username", "string", "user", WARN),
    ("github-basicauth-password", "string", "NEVERLOGGED", WARN),
    ("runner-github-url", "string", "https://github.example", WARN),
    ("runner-status-update-hook", "bool", None, WARN),
    ("default-scale-down-delay", "duration", "5m", WARN),
    ("port", "int", "9443", WARN),
    ("sync-period", "duration", "2m", ("--resync-period", "120")),
    ("common-runner-labels", "var", "a=b,c=d", WARN),
    ("watch-namespace", "string", "arc-systems", ("--namespace", "arc-systems")),
    ("watch-single-namespace", "string", "arc-runners", REFUSED),
    ("read-github-config-secret-from-controller-namespace", "bool", None, REFUSED),
    (
        "exclude-label-propagation-prefix",
        "var",
        "argocd.argoproj.io/",
        ("--exclude-label-propagation-prefix", "argocd.argoproj.io/"),
    ),
    ("log-level", "string", "info", ("--log-level", "info")),
    ("log-format", "string", "json", ("--log-format", "json")),
    ("update-strategy", "string", "eventual", REFUSED),
    (
        "auto-scaler-image-pull-secrets",
        "var",
        "a,b",
        ("--listener-image-pull-secret", "a", "--listener-image-pull-secret", "b"),
    ),
    ("k8s-client-rate-limiter-qps", "int", "50", ("--k8s-client-rate-limiter-qps", "50")),
    ("k8s-client-rate-limiter-burst", "int", "60", ("--k8s-client-rate-limiter-burst", "60")),
    ("pprof-addr", "string", ":6060", REFUSED),
    ("workqueue-rate-limiter", "string", "typed_rate_limiter", ()),
    ("health-probe-bind-address", "string", ":9999", ("--health-probe-bind-address", ":9999")),
    ("kubeconfig", "string", "/kubeconfig", ("--kubeconfig", "/kubeconfig")),
]
ONLY_014: Final = [
    (
        "runner-max-concurrent-reconciles",
        "int",
        "7",
        ("--ephemeral-runner-max-concurrent-reconciles", "7"),
    ),
]
ONLY_015: Final = [
    (
        f"{controller}-max-concurrent-reconciles",
        "int",
        "3",
        (f"--{controller}-max-concurrent-reconciles", "3"),
    )
    for controller in (
        "ephemeral-runner",
        "ephemeral-runner-set",
        "autoscaling-runner-set",
        "autoscaling-listener",
    )
]
ARC_FLAGS: Final = {
    "0.14.2": [*BOTH_LINES, *ONLY_014],
    "0.15.1": [*BOTH_LINES, *ONLY_015],
}
CASES: Final = [
    pytest.param(version, *case, id=f"{version}-{case[0]}")
    for version, cases in ARC_FLAGS.items()
    for case in cases
]


def _args(flag: str, value: str | None) -> list[str]:
    return [f"--{flag}"] if value is None else [f"--{flag}={value}"]


def _contains(args: tuple[str, ...], part: tuple[str, ...]) -> bool:
    return any(args[i : i + len(part)] == part for i in range(len(args) - len(part) + 1))


@pytest.mark.parametrize(("version", "flag", "kind", "value", "expected"), CASES)
def test_every_arc_flag_is_honoured_or_refused_naming_it(
    version: str, flag: str, kind: str, value: str | None, expected: object
) -> None:
    args = [*BASE, *_args(flag, value)]
    if expected == REFUSED:
        with pytest.raises(ConfigError) as refused:
            arc_translate.translate(args, ENV)
        assert refused.value.field == f"--{flag}"
        return
    translation = arc_translate.translate(args, ENV)
    assert version in arc_flags.BY_NAME[flag].lines, "the flag's ARC versions are listed"
    if expected == WARN:
        (warning,) = translation.warnings
        assert f"--{flag}" in warning and "no effect" in warning
        assert "NEVERLOGGED" not in warning, "values (tokens!) are never logged"
    else:
        assert isinstance(expected, tuple)
        assert _contains(translation.args, expected), translation.args
        assert translation.warnings == ()
    # What /manager runs is `ersctl reconcile` with these: every option exists there.
    ersctl_main.commands["reconcile"].make_context("reconcile", list(translation.args))


def test_the_table_above_is_every_flag_ersctl_knows() -> None:
    # A flag in ersctl's table but not transcribed here would go untested.
    transcribed = {case[0] for cases in ARC_FLAGS.values() for case in cases}
    assert transcribed == set(arc_flags.BY_NAME)


def test_without_flags_beyond_the_mode_every_default_is_arcs() -> None:
    args = arc_translate.translate(BASE, ENV).args
    for part in [
        ("--no-leader-elect",),
        ("--lease-name", "actions-runner-controller"),
        ("--lease-namespace", "arc-systems"),
        ("--listener-namespace", "arc-systems"),
        ("--listener-image", ENV["CONTROLLER_MANAGER_CONTAINER_IMAGE"]),
        ("--metrics-addr", ":8080"),
        ("--health-probe-bind-address", ":8081"),
        ("--log-level", "debug"),
        ("--resync-period", "60"),
        ("--ephemeral-runner-max-concurrent-reconciles", "4"),
        ("--ephemeral-runner-set-max-concurrent-reconciles", "2"),
        ("--k8s-client-rate-limiter-qps", "20"),
        ("--k8s-client-rate-limiter-burst", "30"),
    ]:
        assert _contains(args, part), part


def test_014s_and_015s_names_of_the_runner_workers_are_one_flag_the_last_wins() -> None:
    args = arc_translate.translate(
        [
            *BASE,
            "--ephemeral-runner-max-concurrent-reconciles=9",
            "--runner-max-concurrent-reconciles=2",
        ],
        ENV,
    ).args
    context = ersctl_main.commands["reconcile"].make_context("reconcile", list(args))
    assert context.params["runner_workers"] == 2


@pytest.mark.parametrize(
    ("environ", "name"),
    [
        ({}, "CONTROLLER_MANAGER_POD_NAMESPACE"),
        ({"CONTROLLER_MANAGER_POD_NAMESPACE": "arc"}, "CONTROLLER_MANAGER_CONTAINER_IMAGE"),
        ({**ENV, "LISTENER_ENTRYPOINT": "/bin/listen"}, "LISTENER_ENTRYPOINT"),
    ],
)
def test_arcs_environment_is_required_as_arc_requires_it(
    environ: dict[str, str], name: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        arc_translate.translate(BASE, environ)
    assert refused.value.field == name


def test_the_pod_name_reaches_reconcile_as_its_own_pod() -> None:
    translation = arc_translate.translate(BASE, {**ENV, "CONTROLLER_MANAGER_POD_NAME": "arc-0"})
    assert translation.env == {"POD_NAMESPACE": "arc-systems", "POD_NAME": "arc-0"}


def test_a_positional_argument_is_refused_not_ignored_with_what_follows() -> None:
    with pytest.raises(GoFlagError, match="unexpected argument 'run'"):
        arc_translate.translate([*BASE, "run", "--watch-single-namespace=x"], ENV)


def test_an_unknown_value_of_the_update_strategy_is_immediate_with_a_warning() -> None:
    (warning,) = arc_translate.translate([*BASE, "--update-strategy=later"], ENV).warnings
    assert "--update-strategy 'later' not recognized: immediate" in warning


def _manager(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ersctl.arc.manager", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**ENV, **(env or {})},
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--auto-scaling-runner-set-only", "--watch-namespac=arc"], "ersctl: flag provided "
         "but not defined: -watch-namespac; did you mean -watch-namespace?"),
        (["--auto-scaling-runner-set-only", "--log-level"], "ersctl: flag needs an argument: -log-level"),
        (["--watch-single-namespace=arc-runners"], "ersctl: invalid configuration: "
         "--auto-scaling-runner-set-only: missing or false"),
        (["--auto-scaling-runner-set-only", "--pprof-addr=:6060"], "ersctl: invalid "
         "configuration: --pprof-addr: ':6060': ersctl has no Go profiler to serve"),
        (["--auto-scaling-runner-set-only", "--log-level=trace"], "ersctl: invalid "
         "configuration: --log-level: "),
    ],
)  # fmt: skip
def test_manager_refuses_in_one_line_with_exit_2(args: list[str], line: str) -> None:
    done = _manager(*args)
    assert done.returncode == 2, done.stderr
    (only,) = done.stderr.splitlines()
    assert only.startswith(line)


def test_manager_help_lists_every_flag_and_exits_0() -> None:
    done = _manager("-h")
    assert done.returncode == 0, done.stderr
    listed = {
        line.split()[0].lstrip("-")
        for line in done.stderr.splitlines()[1:]
        if line.startswith("  -")
    }
    assert listed == set(arc_flags.BY_NAME)


def test_readmes_table_names_every_arc_flag() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    table = readme.split("| ARC flag | ARC | ersctl |", 1)[1].split("\n\n", 1)[0]
    assert [f for f in arc_flags.BY_NAME if f"`--{f}`" not in table] == []
