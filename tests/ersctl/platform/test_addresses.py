"""The metrics server's address option: one set of rules for both programs."""

from __future__ import annotations

import pytest

from ersctl.platform.addresses import parse_address
from ersctl.platform.errors import ConfigError


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(":8080", ("0.0.0.0", 8080), id="port only"),
        pytest.param("127.0.0.1:9000", ("127.0.0.1", 9000), id="host and port"),
        pytest.param("[::1]:9000", ("::1", 9000), id="an IPv6 host"),
        pytest.param("0", None, id="0 disables"),
        pytest.param("", None, id="empty disables"),
    ],
)
def test_addresses_parse_alike_for_both_programs(
    value: str, expected: tuple[str, int] | None
) -> None:
    assert parse_address("metrics_addr", value) == expected


@pytest.mark.parametrize("value", ["localhost", ":http", ":70000", "host:-1"])
def test_a_malformed_address_is_a_config_error_naming_the_option(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_address("--metrics-addr", value)
    assert str(caught.value).startswith("--metrics-addr: must be [host]:port")
    assert repr(value) in str(caught.value)
