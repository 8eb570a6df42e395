"""``ersctl scaleset``: the one-time step that gives a scale set its id."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from ersctl.cli import main as ersctl
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve

TOKEN = "ghp_scaleset_token_never_printed"


@pytest.fixture
def config_url(sim: GitHubSimulator) -> Iterator[str]:
    server = serve(sim, port=0)
    try:
        yield f"{server.url}/my-org"
    finally:
        server.stop()


def run(config_url: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        ersctl,
        ["scaleset", "--config-url", config_url, "--name", "arc-runners", *args],
        env={"GITHUB_TOKEN": TOKEN} if env is None else env,
    )
    return result.exit_code, result.stdout, result.stderr


def test_it_creates_the_scale_set_once_and_prints_the_same_id_after(
    sim: GitHubSimulator, config_url: str
) -> None:
    code, out, err = run(config_url, "--label", "linux", "--label", "x64")
    assert code == 0, err
    (created,) = sim.state()["scaleSets"]
    assert out.strip() == str(created["id"])
    assert [label["name"] for label in created["labels"]] == ["linux", "x64"]
    assert "created" in err

    code, out, err = run(config_url)
    assert (code, out.strip()) == (0, str(created["id"]))
    assert "found" in err
    assert len(sim.state()["scaleSets"]) == 1
    assert TOKEN not in out + err


def test_without_credentials_it_names_the_variables_to_set(config_url: str) -> None:
    code, out, err = run(config_url, env={"GITHUB_TOKEN": ""})
    assert code == 2  # a configuration error, as everywhere
    assert "GITHUB_TOKEN" in err and out == ""


def test_an_unknown_runner_group_is_one_clear_error(config_url: str) -> None:
    code, _, err = run(config_url, "--runner-group", "nope")
    assert code == 1
    assert "runner group 'nope' not found" in err
