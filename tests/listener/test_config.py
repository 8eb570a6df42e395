"""Configuration: ARC's keys from a JSON file, option overrides, one-line errors (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ghalistener.cli import main
from ghalistener.config import CONFIG_PATH_ENV, MAX_RUNNERS_UNBOUNDED, load_config, parse_config
from ghalistener.errors import ConfigError

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
    assert parse_config(app()).credentials().app_id == "123"  # type: ignore[union-attr]
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
