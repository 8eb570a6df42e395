"""Configuration: ARC's keys from a JSON file, option overrides, one-line errors (exit 2)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ersctl.platform.errors import ConfigError
from ghalistener.actions.auth import AppCredentials
from ghalistener.cli import main
from ghalistener.config import CONFIG_PATH_ENV, MAX_RUNNERS_UNBOUNDED, load_config, parse_config

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretsecretsecret\n-----END RSA PRIVATE KEY-----\n"


def valid(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "configure_url": "https://github.com/octo",
        "github_token": "ghp_abcdefghijklmnop",
        "ephemeral_runner_set_namespace": "arc",
        "ephemeral_runner_set_name": "runners",
        "runner_scale_set_id": 3,
        "min_runners": 1,
        "max_runners": 5,
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def app(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "github_token": None,
        "github_app_id": 123,
        "github_app_installation_id": 456,
        "github_app_private_key": PEM,
    }
    return valid(**{**fields, **changes})


def test_a_complete_file_is_read_with_its_values(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(valid(log_format="json", metrics_addr=":8080")))
    config = load_config(path=str(path), env={})
    assert (config.min_runners, config.max_runners, config.runner_scale_set_id) == (1, 5, 3)
    assert config.log_format == "json"
    assert config.metrics_addr == ":8080"
    assert config.metrics_endpoint == "/metrics"
    assert config.github.organization == "octo"


def test_the_env_variable_names_the_file_when_no_option_does(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(valid(max_runners=9)))
    assert load_config(path=None, env={CONFIG_PATH_ENV: str(path)}).max_runners == 9


def test_options_override_file_values_and_none_means_not_given(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(valid()))
    config = load_config(
        path=str(path),
        env={},
        overrides={"max_runners": 7, "min_runners": None, "log_level": "debug"},
    )
    assert (config.min_runners, config.max_runners, config.log_level) == (1, 7, "debug")


def test_no_maximum_means_unbounded_like_arc() -> None:
    assert parse_config(valid(max_runners=None)).max_runners == MAX_RUNNERS_UNBOUNDED


def test_app_credentials_are_accepted_with_a_numeric_or_client_id() -> None:
    credentials = parse_config(app()).credentials()
    assert isinstance(credentials, AppCredentials) and credentials.app_id == "123"
    assert parse_config(app(github_app_id="Iv1.abc")).github_app_id == "Iv1.abc"


def test_secrets_stay_out_of_the_repr() -> None:
    text = repr(parse_config(app())) + repr(parse_config(valid()))
    assert "ghp_abcdefghijklmnop" not in text
    assert "secretsecret" not in text


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param(valid(github_token=None), "github_token", id="no credentials"),
        pytest.param(
            {**app(), "github_token": "ghp_x"}, "github_token", id="both credential kinds"
        ),
        pytest.param(
            app(github_app_installation_id=None),
            "github_app_installation_id",
            id="app without installation id",
        ),
        pytest.param(
            app(github_app_private_key="nope"),
            "github_app_private_key",
            id="app key that is not PEM",
        ),
        pytest.param(valid(min_runners=6), "min_runners", id="min above max"),
        pytest.param(valid(min_runners=-1), "min_runners", id="negative min"),
        pytest.param(valid(max_runners=-2, min_runners=0), "max_runners", id="negative max"),
        pytest.param(
            valid(max_runners=MAX_RUNNERS_UNBOUNDED + 1), "max_runners", id="max above MaxInt32"
        ),
        pytest.param(
            valid(min_runners=2**31, max_runners=2**32), "min_runners", id="min above MaxInt32"
        ),
        pytest.param(valid(max_runners="five"), "max_runners", id="max not a number"),
        pytest.param(
            valid(ephemeral_runner_set_namespace=None),
            "ephemeral_runner_set_namespace",
            id="no ERS namespace",
        ),
        pytest.param(
            valid(ephemeral_runner_set_name=""), "ephemeral_runner_set_name", id="empty ERS name"
        ),
        pytest.param(valid(runner_scale_set_id=None), "runner_scale_set_id", id="no scale set id"),
        pytest.param(valid(configure_url="not a url"), "configure_url", id="unparsable URL"),
        pytest.param(
            valid(configure_url="https://github.com/a/b/c"),
            "configure_url",
            id="URL of no known form",
        ),
        pytest.param(valid(configure_url=None), "configure_url", id="no URL"),
        pytest.param(valid(log_format="xml"), "log_format", id="unknown log format"),
        pytest.param(valid(log_level="loud"), "log_level", id="unknown log level"),
        pytest.param(
            valid(metrics_addr="8080"), "metrics_addr", id="metrics address without a port"
        ),
        pytest.param(
            valid(metrics_endpoint="metrics"), "metrics_endpoint", id="relative metrics endpoint"
        ),
        pytest.param(valid(min_runners=True), "min_runners", id="a boolean is not a count"),
        pytest.param(valid(max_runners="--5"), "max_runners", id="a doubled minus sign"),
        pytest.param(valid(max_runners="\u00b2"), "max_runners", id="a superscript digit"),
        pytest.param(
            valid(metrics_addr=":\u00b2"), "metrics_addr", id="a superscript metrics port"
        ),
        pytest.param(
            valid(server_root_ca="-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----"),
            "server_root_ca",
            id="a root CA that is no certificate",
        ),
        pytest.param(valid(server_root_ca="caf\u00e9"), "server_root_ca", id="a non-ASCII root CA"),
        pytest.param(
            valid(configure_url="https://u:ghp_userinfo123@github.com/octo"),
            "configure_url",
            id="a token in the URL",
        ),
        pytest.param(
            valid(configure_url="https://ghes.example:99999/octo"),
            "configure_url",
            id="a URL port out of range",
        ),
    ],
)
def test_invalid_configuration_names_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert "\n" not in str(caught.value)
    assert "ghp_" not in str(caught.value) and "secretsecret" not in str(caught.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(None, "cannot read", id="missing file"),
        pytest.param("{not json", "not valid JSON", id="broken JSON"),
        pytest.param("[1, 2]", "JSON object", id="not an object"),
    ],
)
def test_an_unusable_file_is_a_config_error(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "c.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=expected) as caught:
        load_config(path=str(path), env={})
    assert caught.value.field == "config"


@pytest.mark.parametrize(
    ("raw", "args", "field"),
    [
        pytest.param(valid(min_runners=9), [], "min_runners", id="min above max in the file"),
        pytest.param(
            valid(), ["--max-runners", "0"], "min_runners", id="an option makes min exceed max"
        ),
        pytest.param(valid(github_token=None), [], "github_token", id="no credentials"),
    ],
)
def test_run_exits_2_with_one_line_naming_the_field(
    tmp_path: Path, raw: dict[str, Any], args: list[str], field: str
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(raw))
    result = CliRunner().invoke(main, ["run", "--config", str(path), *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert f"invalid configuration: {field}:" in lines[0]


def test_the_installed_program_exits_2_for_an_unreadable_file(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ghalistener", "run", "--config", str(tmp_path / "absent.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "invalid configuration: config: cannot read" in result.stderr


def test_a_mistyped_key_is_an_error_naming_the_key_it_resembles() -> None:
    # It used to be dropped: "max_runner": 10 started with max_runners 2147483647.
    raw = valid(max_runners=None)
    with pytest.raises(ConfigError) as caught:
        parse_config({**raw, "max_runner": 10})
    assert str(caught.value) == "max_runner: unknown key; did you mean max_runners?"


def test_an_unknown_key_like_no_known_one_is_named_without_a_hint() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({**valid(), "colour": "blue"})
    assert str(caught.value) == "colour: unknown key"


def test_the_largest_count_actions_scaleset_accepts_is_accepted() -> None:
    config = parse_config(
        valid(min_runners=MAX_RUNNERS_UNBOUNDED, max_runners=MAX_RUNNERS_UNBOUNDED)
    )
    assert config.max_runners == config.min_runners == 2147483647


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param("vault_type", "azure_key_vault", id="vault type"),
        pytest.param("vault_lookup_key", "creds", id="vault lookup key"),
        pytest.param("azure_key_vault", {"url": "https://v.vault.azure.net"}, id="azure config"),
    ],
)
def test_a_vault_is_not_supported_and_said_so_naming_the_key(key: str, value: Any) -> None:
    # ARC's vault configs carry no github_* keys: this used to answer "no credentials".
    with pytest.raises(ConfigError) as caught:
        parse_config({**valid(github_token=None), key: value})
    assert caught.value.field == key
    assert caught.value.problem.startswith("not supported")


def test_empty_vault_keys_as_arc_writes_them_without_a_vault_are_accepted() -> None:
    raw = {**valid(), "vault_type": "", "vault_lookup_key": "", "azure_key_vault": None}
    assert parse_config(raw) == parse_config(valid())


def test_the_scale_set_name_the_controller_writes_is_accepted_and_changes_nothing() -> None:
    named = parse_config({**valid(), "runner_scale_set_name": "arc-runners"})
    assert named == parse_config(valid())


def test_an_empty_metrics_endpoint_is_the_default_as_arc_writes_it() -> None:
    # ARC's controller writes "metrics_addr": "", "metrics_endpoint": "" with metrics off.
    config = parse_config(valid(metrics_addr="", metrics_endpoint=""))
    assert (config.metrics_addr, config.metrics_endpoint) == ("", "/metrics")
    assert parse_config(valid(metrics_endpoint="/m")).metrics_endpoint == "/m"


def test_the_installed_program_exits_2_naming_the_key_a_typo_resembles(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**valid(max_runners=None), "max_runner": 10}))
    result = subprocess.run(
        [sys.executable, "-m", "ghalistener", "run", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr == (
        "ghalistener: invalid configuration: max_runner: unknown key; did you mean max_runners?\n"
    )


def test_no_command_with_a_config_path_in_the_environment_is_run_as_in_arcs_pod(
    tmp_path: Path,
) -> None:
    # ARC's listener Pod runs the program with no arguments and LISTENER_CONFIG_PATH.
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**valid(), "max_runner": 10}))
    env = {**os.environ, CONFIG_PATH_ENV: str(path)}
    ran = subprocess.run(
        [sys.executable, "-m", "ghalistener"], capture_output=True, text=True, env=env, timeout=60
    )
    assert ran.returncode == 2
    assert "invalid configuration: max_runner: unknown key" in ran.stderr
    env.pop(CONFIG_PATH_ENV)
    usage = subprocess.run(
        [sys.executable, "-m", "ghalistener"], capture_output=True, text=True, env=env, timeout=60
    )
    assert usage.returncode == 2
    assert "Usage: ghalistener [OPTIONS] COMMAND" in usage.stderr


def test_integer_strings_are_accepted_as_int_reads_them() -> None:
    config = parse_config(valid(min_runners=" 2 ", max_runners="+7"))
    assert (config.min_runners, config.max_runners) == (2, 7)


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def signal_handlers() -> Iterator[None]:
    """``run`` installs SIGTERM/SIGINT handlers: give pytest its own back afterwards."""
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def run_cli(tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(valid()))
    result = CliRunner().invoke(main, ["run", "--config", str(path), *args])
    return result.exit_code, result.output.strip().splitlines()


@pytest.mark.usefixtures("signal_handlers")
def test_a_kubeconfig_that_cannot_be_loaded_exits_2_naming_it(tmp_path: Path) -> None:
    code, lines = run_cli(tmp_path, "--kubeconfig", str(tmp_path / "absent"))
    assert code == 2
    assert len(lines) == 1 and "invalid configuration: kubeconfig:" in lines[0]


@pytest.mark.usefixtures("signal_handlers")
def test_a_metrics_address_that_cannot_be_bound_exits_2_naming_it(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    # 192.0.2.1 (TEST-NET-1) is no address of this host: the bind fails at once.
    args = ("--kubeconfig", str(kubeconfig), "--metrics-addr", "192.0.2.1:9100")
    code, lines = run_cli(tmp_path, *args)
    assert code == 2
    assert len(lines) == 1 and "invalid configuration: metrics_addr:" in lines[0]


@pytest.mark.usefixtures("signal_handlers")
def test_a_metrics_port_in_use_exits_1_with_one_line_naming_it(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ("--kubeconfig", str(kubeconfig), "--metrics-addr", f"127.0.0.1:{port}")
        code, lines = run_cli(tmp_path, *args)
    assert code == 1
    assert len(lines) == 1 and "metrics_addr:" in lines[0] and "in use" in lines[0]
