"""Configuration URL forms: scope, names, API base, registration-token path."""

from __future__ import annotations

import pytest

from ghalistener.actions.configurl import Scope, parse_config_url
from ghalistener.actions.errors import ConfigUrlError


@pytest.mark.parametrize(
    ("url", "scope", "names", "api", "token_path"),
    [
        pytest.param(
            "https://github.com/my-org",
            Scope.ORGANIZATION,
            ("", "my-org", ""),
            "https://api.github.com",
            "/orgs/my-org/actions/runners/registration-token",
            id="org on github.com",
        ),
        pytest.param(
            "https://github.com/my-org/my-repo/",
            Scope.REPOSITORY,
            ("", "my-org", "my-repo"),
            "https://api.github.com",
            "/repos/my-org/my-repo/actions/runners/registration-token",
            id="repo with a trailing slash",
        ),
        pytest.param(
            "https://github.com/enterprises/my-ent",
            Scope.ENTERPRISE,
            ("my-ent", "", ""),
            "https://api.github.com",
            "/enterprises/my-ent/actions/runners/registration-token",
            id="enterprise",
        ),
        pytest.param(
            "https://github.com/Enterprises/my-ent//",
            Scope.ENTERPRISE,
            ("my-ent", "", ""),
            "https://api.github.com",
            "/enterprises/my-ent/actions/runners/registration-token",
            id="enterprises matched case-insensitively, slashes ignored",
        ),
        pytest.param(
            "https://www.github.com/my-org",
            Scope.ORGANIZATION,
            ("", "my-org", ""),
            "https://api.github.com",
            "/orgs/my-org/actions/runners/registration-token",
            id="www.github.com maps to api.github.com",
        ),
        pytest.param(
            "https://tenant.ghe.com/my-org/my-repo",
            Scope.REPOSITORY,
            ("", "my-org", "my-repo"),
            "https://api.tenant.ghe.com",
            "/repos/my-org/my-repo/actions/runners/registration-token",
            id="ghe.com data residency host",
        ),
        pytest.param(
            "http://github.localhost/my-org",
            Scope.ORGANIZATION,
            ("", "my-org", ""),
            "http://api.github.localhost",
            "/orgs/my-org/actions/runners/registration-token",
            id="github.localhost keeps its scheme",
        ),
        pytest.param(
            "https://ghes.example.com/enterprises/ent",
            Scope.ENTERPRISE,
            ("ent", "", ""),
            "https://ghes.example.com/api/v3",
            "/enterprises/ent/actions/runners/registration-token",
            id="GHES enterprise",
        ),
        pytest.param(
            "http://127.0.0.1:8080/my-org",
            Scope.ORGANIZATION,
            ("", "my-org", ""),
            "http://127.0.0.1:8080/api/v3",
            "/orgs/my-org/actions/runners/registration-token",
            id="GHES on a port, plain http",
        ),
    ],
)
def test_config_url_forms_are_parsed(
    url: str, scope: Scope, names: tuple[str, str, str], api: str, token_path: str
) -> None:
    config = parse_config_url(url, env={})
    assert config.scope is scope
    assert (config.enterprise, config.organization, config.repository) == names
    assert config.api_url == api
    assert config.registration_token_path == token_path
    assert not config.config_url.endswith("/")


def test_hosted_and_ghes_are_told_apart() -> None:
    assert parse_config_url("https://github.com/o", env={}).is_hosted
    assert not parse_config_url("https://ghes.corp/o", env={}).is_hosted


def test_force_ghes_env_turns_github_com_into_the_ghes_form() -> None:
    config = parse_config_url("https://github.com/my-org", env={"GITHUB_ACTIONS_FORCE_GHES": "1"})
    assert not config.is_hosted
    assert config.api_url == "https://github.com/api/v3"


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://github.com", id="no path"),
        pytest.param("https://github.com/", id="only a slash"),
        pytest.param("https://github.com/a/b/c", id="three segments"),
        pytest.param("github.com/my-org", id="no scheme"),
        pytest.param("ftp://github.com/my-org", id="wrong scheme"),
        pytest.param("", id="empty"),
    ],
)
def test_invalid_config_urls_raise_a_clear_error(url: str) -> None:
    with pytest.raises(ConfigUrlError, match="config URL"):
        parse_config_url(url, env={})


def test_the_config_url_sent_to_github_has_no_trailing_slash() -> None:
    assert parse_config_url("https://github.com/o/r///", env={}).config_url == (
        "https://github.com/o/r"
    )


@pytest.mark.parametrize(
    "url",
    [
        pytest.param(
            "https://x-access-token:ghp_SECRETtoken42@github.com/org", id="user and token"
        ),
        pytest.param("https://ghp_SECRETtoken42@github.com/org", id="token as the user"),
        pytest.param("https://ghp_SECRETtoken42:@ghes.example/org/repo", id="GHES, empty password"),
        pytest.param("ftp://u:ghp_SECRETtoken42@ghes.example/org", id="other scheme"),
        pytest.param("ghp_SECRETtoken42@github.com/org", id="no scheme"),
    ],
)
def test_credentials_in_the_url_are_refused_without_echoing_them(url: str) -> None:
    # The URL is logged ("refreshing the admin connection for ...") and shown in reprs,
    # so a token in its userinfo would leak; the error must not show it either.
    with pytest.raises(ConfigUrlError, match="must not carry credentials") as caught:
        parse_config_url(url)
    assert "SECRET" not in str(caught.value)


def test_an_at_sign_in_the_path_is_not_userinfo() -> None:
    assert parse_config_url("https://github.com/org@team").organization == "org@team"
