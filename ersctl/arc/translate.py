"""ARC's manager arguments and environment -> the ``ersctl reconcile`` run that means the
same (:func:`translate`), and ``-h``'s list (:func:`usage`).

The environment: ``CONTROLLER_MANAGER_POD_NAMESPACE`` (required, as in ARC: the
listeners and the leader-election Lease live there), ``CONTROLLER_MANAGER_CONTAINER_IMAGE``
(required, as in ARC: the listener image), ``CONTROLLER_MANAGER_POD_NAME`` (this Pod),
``LISTENER_ENTRYPOINT`` (ARC's override of the listener command: only ``/ghalistener``,
the image's, is accepted). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ersctl.arc.flags import BY_NAME, FLAGS
from ersctl.platform.errors import ConfigError, did_you_mean
from ersctl.platform.goflags import GoFlagError, Kind, parse

POD_NAMESPACE_ENV: Final = "CONTROLLER_MANAGER_POD_NAMESPACE"
IMAGE_ENV: Final = "CONTROLLER_MANAGER_CONTAINER_IMAGE"
POD_NAME_ENV: Final = "CONTROLLER_MANAGER_POD_NAME"
ENTRYPOINT_ENV: Final = "LISTENER_ENTRYPOINT"
LISTENER_ENTRYPOINT: Final = "/ghalistener"


@dataclass(frozen=True)
class Translation:
    """What ``/manager`` runs: ``ersctl reconcile`` with :attr:`args`, :attr:`env` added
    to the environment, and :attr:`warnings` logged first."""

    args: tuple[str, ...]
    env: Mapping[str, str]
    warnings: tuple[str, ...]
    log_level: str = "debug"
    log_format: str = "text"


def translate(argv: Sequence[str], environ: Mapping[str, str]) -> Translation:
    """ARC's manager arguments and environment -> :class:`Translation`.

    ``GoFlagError`` for arguments Go's ``flag`` would refuse, ``ConfigError`` naming
    the flag (or variable) for a value ersctl cannot honour; ``HelpRequested`` for
    ``-h``/``-help``. Each flag not given takes ARC's default."""
    try:
        parsed = parse(argv, {flag.name: flag.kind for flag in FLAGS})
    except GoFlagError as exc:
        unknown = str(exc).partition("flag provided but not defined: ")[2]
        if not unknown:
            raise
        hint = did_you_mean(unknown, [f"-{name}" for name in BY_NAME])
        raise GoFlagError(f"{exc}{hint}") from None
    if parsed.positional:
        raise GoFlagError(
            f"unexpected argument {parsed.positional[0]!r}: ARC's manager stops reading "
            "flags there and ignores the rest"
        )
    given = dict(parsed.flags)
    # An alias and its flag are one flag: the last given wins, as for any Go flag.
    occurrences = [(BY_NAME[n].alias_of or n, v) for n, v in parsed.flags]
    args: list[str] = []
    chosen: dict[str, object] = {}
    for flag in FLAGS:
        if flag.alias_of is not None:
            continue
        values = [v for n, v in occurrences if n == flag.name]
        if flag.kind is not Kind.LIST:
            values = values[-1:] or [flag.default]
            chosen[flag.name] = values[0]
        for value in values:
            why = flag.refuse(value) if flag.refuse is not None else None
            if why is not None:
                raise ConfigError(f"--{flag.name}", why)
            args += flag.arguments(value)
    return Translation(
        args=(*args, *_environment_args(environ)),
        env=_pod_env(environ),
        warnings=_warnings(given),
        log_level=str(chosen["log-level"]),
        log_format=str(chosen["log-format"]),
    )


def usage() -> str:
    """``-h``: every flag as Go's ``flag`` lists them, with what ersctl does with it."""
    lines = ["Usage of /manager (ersctl reconcile, read from ARC's controller flags):"]
    for flag in FLAGS:
        kind = "" if flag.kind is Kind.BOOL else f" {flag.kind.value}"
        lines.append(f"  -{flag.name}{kind}")
        lines.append(f"    \t{flag.meaning} (ARC {', '.join(flag.lines)})")
    return "\n".join(lines)


def _environment_args(environ: Mapping[str, str]) -> list[str]:
    namespace = environ.get(POD_NAMESPACE_ENV, "")
    if not namespace:
        raise ConfigError(
            POD_NAMESPACE_ENV,
            "not set: ARC's chart sets it to the Pod's namespace (fieldRef "
            "metadata.namespace), where the listeners and the Lease live",
        )
    image = environ.get(IMAGE_ENV, "")
    if not image:
        raise ConfigError(IMAGE_ENV, "not set: the listener Pods' image (ARC's chart sets it)")
    entrypoint = environ.get(ENTRYPOINT_ENV, "")
    if entrypoint not in ("", LISTENER_ENTRYPOINT):
        raise ConfigError(
            ENTRYPOINT_ENV, f"{entrypoint!r}: the listener Pod runs {LISTENER_ENTRYPOINT}"
        )
    return [
        "--listener-namespace",
        namespace,
        "--lease-namespace",
        namespace,
        "--listener-image",
        image,
    ]


def _pod_env(environ: Mapping[str, str]) -> dict[str, str]:
    """ARC's names of this Pod, as ``ersctl reconcile`` reads them."""
    env = {"POD_NAMESPACE": environ[POD_NAMESPACE_ENV]}
    if environ.get(POD_NAME_ENV):
        env["POD_NAME"] = environ[POD_NAME_ENV]
    return env


def _warnings(given: Mapping[str, object]) -> tuple[str, ...]:
    warnings = []
    ignored = [
        f"--{name}"
        for name in given
        if not (BY_NAME[name].option or BY_NAME[name].refuse or BY_NAME[name].alias_of)
    ]
    if ignored:
        warnings.append(
            f"{', '.join(ignored)}: no effect in ARC's scale-set mode "
            "(--auto-scaling-runner-set-only), in ersctl as in ARC"
        )
    strategy = given.get("update-strategy")
    if strategy is not None and strategy not in ("immediate", "eventual"):
        warnings.append(f"--update-strategy {strategy!r} not recognized: immediate, as in ARC")
    return tuple(warnings)
