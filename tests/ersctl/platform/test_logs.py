"""Logging, the same in both programs: one text format, one JSON schema, one set of
level names, secrets redacted as whole values, library chatter kept below INFO."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from ersctl.platform.errors import ConfigError
from ersctl.platform.logs import configure_logging, log_fields
from ersctl.platform.redaction import REDACTED

TOKEN = "ghp_TOPSECRETTOKEN1234"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretkeymaterialxyz\n-----END RSA PRIVATE KEY-----"


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    yield stream
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "stream", None) is stream:
            root.removeHandler(handler)


def test_json_lines_carry_the_structured_fields(captured: io.StringIO) -> None:
    configure_logging(level="info", fmt="json", stream=captured)
    logging.getLogger("ghalistener.listener").info(
        "published desired runner count", extra={"fields": {"replicas": 3, "patch_id": 7}}
    )
    line = json.loads(captured.getvalue())
    assert line["msg"] == "published desired runner count"
    assert (line["replicas"], line["patch_id"], line["level"]) == (3, 7, "info")


def test_text_lines_carry_key_value_pairs(captured: io.StringIO) -> None:
    configure_logging(level="info", fmt="text", stream=captured)
    logging.getLogger("ghalistener.x").info(
        "scaled", extra={"fields": {"replicas": 2, "note": "a b"}}
    )
    assert 'scaled replicas=2 note="a b"' in captured.getvalue()


def test_the_level_filters_debug_lines(captured: io.StringIO) -> None:
    configure_logging(level="warn", fmt="text", stream=captured)
    logging.getLogger("ghalistener.x").info("quiet")
    logging.getLogger("ghalistener.x").warning("loud")
    assert "quiet" not in captured.getvalue() and "loud" in captured.getvalue()


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize(
    "leak",
    [
        pytest.param(f"token is {TOKEN}", id="a configured token in the message"),
        pytest.param(f"key {PEM}", id="a configured private key"),
        pytest.param("Authorization: Bearer abcdefgh12345678", id="an unregistered bearer token"),
        pytest.param("ghs_unregisteredinstallationtoken", id="an unregistered GitHub token"),
        pytest.param("jwt eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJl", id="a JWT"),
    ],
)
def test_no_secret_reaches_a_log_line(captured: io.StringIO, fmt: str, leak: str) -> None:
    configure_logging(level="debug", fmt=fmt, secrets=[TOKEN, PEM], stream=captured)
    log = logging.getLogger("ghalistener.x")
    log.info(leak, extra={"fields": {"detail": leak}})
    try:
        raise RuntimeError(leak)
    except RuntimeError:
        log.exception("failed")
    out = captured.getvalue()
    for secret in (
        TOKEN,
        "secretkeymaterial",
        "abcdefgh12345678",
        "unregisteredinstallation",
        "c2lnbmF0dXJl",
    ):
        assert secret not in out
    assert REDACTED in out


@pytest.mark.parametrize("name", ["warn", "warning", "WARN"])
def test_warn_and_warning_name_the_same_level(captured: io.StringIO, name: str) -> None:
    configure_logging(level=name, fmt="text", stream=captured)
    logging.getLogger("ersctl.x").info("quiet")
    logging.getLogger("ghalistener.x").warning("loud")
    assert "quiet" not in captured.getvalue() and "loud" in captured.getvalue()


def test_an_unknown_level_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="log_level: must be one of debug, info, warn, error"):
        configure_logging(level="verbose")


def test_a_registered_value_is_redacted_whole_and_never_cuts_into_other_words(
    captured: io.StringIO,
) -> None:
    # A token that is also a piece of ordinary words: only the standalone value goes.
    configure_logging(level="info", fmt="text", secrets=["Retry1234"], stream=captured)
    logging.getLogger("ersctl.x").warning("MaxRetry1234Error token=Retry1234 ends")
    line = captured.getvalue()
    assert "MaxRetry1234Error" in line
    assert f"token={REDACTED} ends" in line
    assert "=Retry1234" not in line


def test_a_private_key_is_redacted_in_json_even_line_by_line(captured: io.StringIO) -> None:
    configure_logging(level="info", fmt="json", secrets=[PEM], stream=captured)
    body_line = PEM.splitlines()[1]
    logging.getLogger("ersctl.x").warning("one line of it: %s", body_line)
    doc = json.loads(captured.getvalue())
    assert "secretkeymaterial" not in captured.getvalue()
    assert doc["msg"] == f"one line of it: {REDACTED}"


@pytest.mark.parametrize(
    ("logger", "level", "message"),
    [
        pytest.param("httpx", logging.INFO, 'HTTP Request: GET https://x "200 OK"', id="httpx"),
        pytest.param(
            "urllib3.connectionpool",
            logging.WARNING,
            "Retrying (Retry(total=2, connect=None)) after connection broken",
            id="urllib3 retries",
        ),
        pytest.param(
            "leaderelection", logging.INFO, "Failed to update lock as (500)", id="leader election"
        ),
    ],
)
def test_library_chatter_stays_below_info(
    captured: io.StringIO, logger: str, level: int, message: str
) -> None:
    configure_logging(level="info", fmt="text", stream=captured)
    logging.getLogger(logger).log(level, message)
    assert captured.getvalue() == ""
    configure_logging(level="debug", fmt="text", stream=captured, http=True)
    logging.getLogger(logger).log(level, message)
    assert f"DEBUG {logger} {message}" in captured.getvalue()


WIRE_TRACES = [
    ("httpcore.connection", "connect_tcp.started host='127.0.0.1' port=8443"),
    ("httpcore.http11", "send_request_headers.complete"),
    ("httpx", 'HTTP Request: GET https://x "200 OK"'),
    ("urllib3.connectionpool", 'https://k:6443 "GET /api HTTP/1.1" 200 None'),
]


def test_debug_level_leaves_out_the_http_libraries_wire_traces(captured: io.StringIO) -> None:
    # At debug, httpcore alone wrote some fourteen lines a request around our own.
    configure_logging(level="debug", fmt="text", stream=captured)
    for logger, message in WIRE_TRACES:
        logging.getLogger(logger).debug(message)
    logging.getLogger("httpx").info("HTTP Request: GET https://x")  # demoted to DEBUG
    logging.getLogger("ersctl.x").debug("our own")
    logging.getLogger("httpcore.connection").warning("not a trace")
    lines = captured.getvalue().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == [
        "DEBUG ersctl.x our own",
        "WARNING httpcore.connection not a trace",
    ]


def test_log_http_lets_the_wire_traces_through(captured: io.StringIO) -> None:
    configure_logging(level="debug", fmt="text", stream=captured, http=True)
    for logger, message in WIRE_TRACES:
        logging.getLogger(logger).debug(message)
    for logger, message in WIRE_TRACES:
        assert f"DEBUG {logger} {message}" in captured.getvalue()


def test_bound_fields_are_on_every_line_of_their_block_and_a_lines_own_win(
    captured: io.StringIO,
) -> None:
    configure_logging(level="info", fmt="json", stream=captured, fields={"program": "p"})
    log = logging.getLogger("ersctl.x")
    with log_fields(kind="EphemeralRunnerSet", namespace="ns", name="web", reconcileID="r1"):
        log.info("reconciled: none")
        with log_fields(name="web-runner-1"):
            log.info("runner", extra={"fields": {"phase": "Running", "namespace": "own"}})
    log.info("after")
    first, nested, after = (json.loads(line) for line in captured.getvalue().splitlines())
    assert first["msg"] == "reconciled: none"
    assert {k: first[k] for k in ("program", "kind", "namespace", "name", "reconcileID")} == {
        "program": "p",
        "kind": "EphemeralRunnerSet",
        "namespace": "ns",
        "name": "web",
        "reconcileID": "r1",
    }
    assert (nested["name"], nested["namespace"], nested["phase"]) == (
        "web-runner-1",
        "own",
        "Running",
    )
    assert nested["reconcileID"] == "r1"
    assert "kind" not in after and after["program"] == "p"


def test_bound_fields_read_as_key_value_pairs_in_text(captured: io.StringIO) -> None:
    configure_logging(level="info", fmt="text", stream=captured)
    with log_fields(kind="EphemeralRunner", namespace="ns", name="r-1"):
        logging.getLogger("ersctl.x").info("runner is Running")
    assert (
        captured.getvalue()
        .rstrip()
        .endswith("INFO ersctl.x runner is Running kind=EphemeralRunner namespace=ns name=r-1")
    )


def test_configuring_twice_keeps_one_handler(captured: io.StringIO) -> None:
    configure_logging(fmt="text", stream=captured)
    configure_logging(fmt="json", stream=captured)
    logging.getLogger("ersctl.test").warning("once")
    assert len(captured.getvalue().splitlines()) == 1
