"""Go's ``flag`` syntax, as ``/manager`` must take ARC's arguments (ersctl.platform.goflags)."""

from __future__ import annotations

import pytest

from ersctl.platform.goflags import (
    GoFlagError,
    HelpRequested,
    Kind,
    parse,
    parse_duration,
    parse_int,
)

FLAGS = {
    "only": Kind.BOOL,
    "level": Kind.STRING,
    "qps": Kind.INT,
    "sync": Kind.DURATION,
    "prefix": Kind.LIST,
}


@pytest.mark.parametrize(
    ("args", "flags", "positional"),
    [
        pytest.param(["-level", "info"], [("level", "info")], [], id="-flag value"),
        pytest.param(["--level", "info"], [("level", "info")], [], id="--flag value"),
        pytest.param(["-level=info"], [("level", "info")], [], id="-flag=value"),
        pytest.param(["--level="], [("level", "")], [], id="an empty value"),
        pytest.param(["--level", "-x"], [("level", "-x")], [], id="a value that looks like a flag"),
        pytest.param(["--only"], [("only", True)], [], id="a boolean alone is true"),
        pytest.param(["-only=false"], [("only", False)], [], id="a boolean with =false"),
        pytest.param(["--only=0", "--only=T"], [("only", False), ("only", True)], [], id="0 and T"),
        pytest.param(["--only", "false"], [("only", True)], ["false"], id="no value after a space"),
        pytest.param(["--qps=20", "--", "--qps=1"], [("qps", 20)], ["--qps=1"], id="-- ends flags"),
        pytest.param(["-", "--only"], [], ["-", "--only"], id="- is positional"),
        pytest.param(["run", "--only"], [], ["run", "--only"], id="flags stop at a positional"),
        pytest.param(
            ["--prefix=a/", "--prefix", "b/"], [("prefix", "a/"), ("prefix", "b/")], [], id="a list"
        ),
        pytest.param(["--sync=1m30s"], [("sync", 90.0)], [], id="a duration"),
    ],
)
def test_arguments_read_as_gos_flag_package_reads_them(
    args: list[str], flags: list[tuple[str, object]], positional: list[str]
) -> None:
    parsed = parse(args, FLAGS)
    assert list(parsed.flags) == flags
    assert list(parsed.positional) == positional


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nope"], "flag provided but not defined: -nope"),
        (["--level"], "flag needs an argument: -level"),
        (["---level=x"], "bad flag syntax: ---level=x"),
        (["-=x"], "bad flag syntax: -=x"),
        (["--only=yes"], 'invalid boolean value "yes" for -only: parse error'),
        (["--qps=2.5"], 'invalid value "2.5" for flag -qps: parse error'),
        (["--qps=1_000"], 'invalid value "1_000" for flag -qps: parse error'),
        (["--qps=9223372036854775808"], "value out of range"),
        (["--sync=5"], 'invalid value "5" for flag -sync: parse error'),
    ],
)
def test_what_go_refuses_is_one_error_in_gos_words(args: list[str], message: str) -> None:
    with pytest.raises(GoFlagError) as caught:
        parse(args, FLAGS)
    assert message in str(caught.value)
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("flag", ["-h", "--help", "-help"])
def test_help_is_asked_for_unless_defined(flag: str) -> None:
    with pytest.raises(HelpRequested):
        parse([flag], FLAGS)
    assert parse([flag], {"help": Kind.BOOL, "h": Kind.BOOL}).flags == ((flag.lstrip("-"), True),)


@pytest.mark.parametrize(
    ("text", "value"),
    [("42", 42), ("-7", -7), ("0x1F", 31), ("010", 8), ("0o17", 15), ("0b1_01", 5), ("+3", 3)],
)
def test_integers_are_strconv_parseint_base_0(text: str, value: int) -> None:
    assert parse_int(text) == value


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("300ms", 0.3),
        ("1.5h", 5400.0),
        ("2h45m", 9900.0),
        ("-1m", -60.0),
        ("1us", 1e-6),
    ],
)
def test_durations_are_time_parseduration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "m", "1", ".s", "1x", "1m-"])
def test_what_parseduration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="parse error"):
        parse_duration(text)
