"""``ersctl scaleset``: find or create a runner scale set, print its id.

A listener and an EphemeralRunnerSet serve one scale set, named by its id
(``runner_scale_set_id``, ``spec.ephemeralRunnerSpec.runnerScaleSetId``). ARC creates
scale sets from its AutoscalingRunnerSet; this project has no such resource, so this
command does it once per scale set, idempotently: an existing set of that name in the
runner group is reused. Its labels are what workflows put in ``runs-on``.

The credential comes from the environment (``GITHUB_TOKEN``, or ``GITHUB_APP_ID``,
``GITHUB_APP_INSTALLATION_ID`` and ``GITHUB_APP_PRIVATE_KEY``), never from the command
line, where it would be visible to other users of the machine. Output: the id alone
on stdout, so ``ID=$(ersctl scaleset ...)`` works.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

from ersctl.platform.cli import loading, run_command
from ersctl.platform.errors import ConfigError, Failure
from ghalistener.actions.auth import Credentials
from ghalistener.actions.configurl import parse_config_url
from ghalistener.actions.credentials import CREDENTIAL_KEYS, CredentialsKeyError, parse_credentials
from ghalistener.actions.errors import ConfigUrlError
from ghalistener.actions.types import (
    Label,
    RunnerScaleSet,
    RunnerSetting,
    ScaleSetId,
    SystemInfo,
)

if TYPE_CHECKING:  # imported when the command runs (see main)
    from ghalistener.actions.client import ActionsClient

DEFAULT_RUNNER_GROUP_ID = 1
"""The id of every organization's "Default" runner group."""


def ensure_scale_set(
    client: ActionsClient, *, name: str, runner_group: str | None, labels: tuple[str, ...]
) -> tuple[RunnerScaleSet, bool]:
    """The scale set ``name`` in ``runner_group`` (default group when None), created
    when absent; returns it and whether it was created now. Raises ActionsError, or
    Failure for an unknown runner group."""
    group_id = DEFAULT_RUNNER_GROUP_ID
    if runner_group:
        group = client.get_runner_group_by_name(runner_group)
        if group is None:
            raise Failure(f"runner group {runner_group!r} not found")
        group_id = group.id
    existing = client.get_runner_scale_set(group_id, name)
    if existing is not None:
        return existing, False
    wanted = RunnerScaleSet(
        id=ScaleSetId(0),  # not yet assigned: the service gives the id
        name=name,
        runner_group_id=group_id,
        labels=tuple(Label(name=label) for label in (labels or (name,))),
        runner_setting=RunnerSetting(ephemeral=True, disable_update=True),
    )
    return client.create_runner_scale_set(wanted), True


def credentials_from_env(env: Mapping[str, str]) -> Credentials:
    """PAT or GitHub App credentials from the environment (``GITHUB_TOKEN``, or the
    ``GITHUB_APP_*`` variables), by the parser the listener and the controller use;
    ConfigError naming the variable."""
    try:
        return parse_credentials({key: env.get(key.upper()) for key in CREDENTIAL_KEYS})
    except CredentialsKeyError as exc:
        raise ConfigError(exc.key.upper(), exc.problem) from None


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config-url", required=True, help="https://github.com/ORG (or ORG/REPO, enterprises/ENT)."
)
@click.option("--name", required=True, help="The scale set's name (its label by default).")
@click.option("--runner-group", default=None, help="Runner group name (default: Default).")
@click.option(
    "--label", "labels", multiple=True, help="A runs-on label (repeatable; default: the name)."
)
def main(config_url: str, name: str, runner_group: str | None, labels: tuple[str, ...]) -> None:
    """Find or create the runner scale set NAME and print its id."""
    with run_command("ersctl"):
        credentials = credentials_from_env(os.environ)
        try:
            parse_config_url(config_url)
        except ConfigUrlError as exc:
            raise ConfigError("--config-url", str(exc)) from None
        # Imported once the input is checked: the HTTP client is most of the start-up
        # (this command is declared on ersctl's command line, whose --help needs none).
        with loading():
            from ghalistener.actions.client import ActionsClient

        with ActionsClient(
            config_url=config_url,
            credentials=credentials,
            system_info=SystemInfo(subsystem="controller"),
        ) as client:
            scale_set, created = ensure_scale_set(
                client, name=name, runner_group=runner_group, labels=labels
            )
    click.echo(f"{'created' if created else 'found'} scale set {name!r}", err=True)
    click.echo(scale_set.id)
