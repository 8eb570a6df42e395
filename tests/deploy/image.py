"""What ``docker build`` would do in the image's build stage, reproduced without Docker.

Each piece covers what this repository's Dockerfile and .dockerignore use, and refuses
(``ValueError``) what it does not implement rather than guess:

- :func:`dockerfile_stages`: the Dockerfile's instructions, split into stages.
- :class:`DockerIgnore`: .dockerignore read and applied as Docker does (moby's
  patternmatcher): ``#`` in column 1 is a comment, lines are trimmed and cleaned (a leading
  ``/`` dropped), ``*`` and ``?`` stop at ``/``, ``**`` spans directories, ``\\`` escapes;
  a pattern excludes a path when it matches the path or one of its parent directories, and
  the last matching line (``!`` re-includes) decides. No character classes (``[...]``).
- :func:`copy_build_stage`: what a stage's ``COPY`` instructions take from the build
  context (directories copied by content, files into a ``/``-ended destination), placed
  under a local root; no ``--from``, wildcards or JSON form.
- :func:`make_stage_links`: the symbolic links a stage's ``RUN ln -s TARGET LINK``
  instructions make, made under a local root; any other use of ``ln`` in a ``RUN``
  (several commands, other options) is refused.
- :func:`image_root`: the final stage's filesystem as far as the programs are concerned
  (the virtual environment's ``bin/`` as pip fills it from the wheel, the stage's
  links), and :func:`run_isolated` to run a program of it from the wheel alone.
- :func:`stage_env`: the variables a stage's ``ENV`` instructions set (``KEY=VALUE``
  form only).
- :func:`pruned_from_venv`: what a stage's ``RUN`` instructions take out of the virtual
  environment after installing: the distributions of ``pip uninstall --yes`` and the
  package directories of ``rm -r .../site-packages/...``.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from importlib.metadata import EntryPoint, PathDistribution
from pathlib import Path, PurePosixPath
from subprocess import PIPE
from typing import Any

IGNORE_FILE = ".dockerignore"
# COPY flags that change ownership or layering, not which files are copied.
_CONTENT_NEUTRAL_FLAGS = ("--chown=", "--chmod=", "--link")


def dockerfile_stages(dockerfile: Path) -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), split into stages."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text(encoding="utf-8"))
    stages: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


def stage_named(stages: list[list[str]], name: str) -> list[str]:
    """The stage declared ``FROM ... AS <name>``."""
    for stage in stages:
        words = stage[0].split()
        if len(words) == 4 and words[2].upper() == "AS" and words[3] == name:
            return stage
    raise ValueError(f"no stage named {name!r}")


class DockerIgnore:
    """The rules of one .dockerignore file; :meth:`excludes` applies them to a path."""

    def __init__(self, text: str) -> None:
        self.rules: list[tuple[re.Pattern[str], bool]] = []
        for number, raw in enumerate(text.splitlines()):
            line = raw.removeprefix("\ufeff") if number == 0 else raw
            if line.startswith("#"):
                continue
            line = line.strip()
            if not line:
                continue
            exception = line.startswith("!")
            if exception:
                line = line[1:].strip()
                if not line:
                    raise ValueError(f"{IGNORE_FILE} line {number + 1}: a bare '!'")
            pattern = posixpath.normpath(line)
            if len(pattern) > 1 and pattern.startswith("/"):
                pattern = pattern[1:]
            self.rules.append((_compile(pattern), exception))

    @classmethod
    def of(cls, context: Path) -> DockerIgnore:
        """The context's .dockerignore (no rules when there is none)."""
        path = context / IGNORE_FILE
        return cls(path.read_text(encoding="utf-8") if path.exists() else "")

    def excludes(self, path: str) -> bool:
        """Whether ``path`` (relative to the context root, ``/``-separated) is left out."""
        parts = PurePosixPath(path).parts
        candidates = [path, *("/".join(parts[:i]) for i in range(1, len(parts)))]
        excluded = False
        for regex, exception in self.rules:
            if any(regex.fullmatch(candidate) for candidate in candidates):
                excluded = not exception
        return excluded


def _compile(pattern: str) -> re.Pattern[str]:
    """moby patternmatcher's translation of one cleaned pattern to a regular expression."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                i += 1
            out.append(".*" if i >= len(pattern) else "(?:.*/)?")
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif ch == "[":
            raise ValueError(f"{IGNORE_FILE} pattern {pattern!r}: character classes unsupported")
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def copy_build_stage(stage: list[str], *, context: Path, root: Path) -> Path:
    """Carry out ``stage``'s ``WORKDIR`` and ``COPY`` instructions from ``context`` into
    ``root`` (the stage's ``/``), honouring the context's .dockerignore. Returns the
    directory (under ``root``) that ``pip install .`` runs in."""
    ignore = DockerIgnore.of(context)
    workdir = PurePosixPath("/")
    install_dir: Path | None = None
    for instruction in stage[1:]:
        keyword, _, rest = instruction.partition(" ")
        keyword = keyword.upper()
        if keyword == "WORKDIR":
            workdir = workdir / rest.strip()
        elif keyword == "COPY":
            _copy(rest, context=context, ignore=ignore, target=root, workdir=workdir)
        elif keyword == "RUN" and re.search(r"\bpip install \.(\s|$)", rest):
            install_dir = root / workdir.relative_to("/")
    if install_dir is None:
        raise ValueError("the stage runs no `pip install .`")
    return install_dir


def _copy(
    arguments: str, *, context: Path, ignore: DockerIgnore, target: Path, workdir: PurePosixPath
) -> None:
    if arguments.lstrip().startswith("["):
        raise ValueError(f"COPY {arguments}: the JSON form is not implemented")
    words = shlex.split(arguments)
    flags = [w for w in words if w.startswith("--")]
    for flag in flags:
        if flag.startswith("--from="):
            return  # from another stage or image, not from the build context
        if not flag.startswith(_CONTENT_NEUTRAL_FLAGS):
            raise ValueError(f"COPY {arguments}: flag {flag} is not implemented")
    *sources, dest = [w for w in words if not w.startswith("--")]
    destination = target / (workdir / dest).relative_to("/")
    into_dir = dest.endswith("/") or len(sources) > 1
    for source in sources:
        if any(c in source for c in "*?["):
            raise ValueError(f"COPY {arguments}: wildcards are not implemented")
        name = posixpath.normpath(source).lstrip("/") or "."
        path = context / name
        if not path.exists() or (name != "." and ignore.excludes(name)):
            raise ValueError(f"COPY {arguments}: {source} is not in the build context")
        if path.is_dir():
            _copy_tree(path, name, ignore=ignore, destination=destination)
        else:
            to = destination / path.name if into_dir else destination
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, to)


def _copy_tree(path: Path, name: str, *, ignore: DockerIgnore, destination: Path) -> None:
    """The contents of directory ``path`` (``name`` in the context) that the context holds."""
    for directory, _, files in os.walk(path):
        for file in files:
            source = Path(directory, file)
            relative = source.relative_to(path).as_posix()
            if ignore.excludes(relative if name == "." else f"{name}/{relative}"):
                continue
            to = destination / relative
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to)


def make_stage_links(stage: list[str], *, root: Path) -> dict[str, Path]:
    """Make under ``root`` (the stage's ``/``) the links of the stage's ``RUN ln -s TARGET
    LINK`` instructions, each pointing at its target under ``root``. Returns the links by
    their path in the image."""
    made: dict[str, Path] = {}
    for instruction in stage[1:]:
        keyword, _, rest = instruction.partition(" ")
        if keyword.upper() != "RUN" or not re.search(r"(^|\s)ln\s", rest):
            continue
        words = shlex.split(rest)
        if len(words) != 4 or words[:2] != ["ln", "-s"] or not words[2].startswith("/"):
            raise ValueError(f"RUN {rest}: only `ln -s /TARGET LINK` is implemented")
        target, link = PurePosixPath(words[2]), PurePosixPath(words[3])
        local = root / link.relative_to("/")
        local.parent.mkdir(parents=True, exist_ok=True)
        local.symlink_to(root / target.relative_to("/"))
        made[str(link)] = local
    return made


def console_scripts(site: Path) -> dict[str, EntryPoint]:
    (dist_info,) = site.glob("*.dist-info")
    entry_points = PathDistribution(dist_info).entry_points
    return {ep.name: ep for ep in entry_points if ep.group == "console_scripts"}


def run_isolated(
    site: Path, cwd: Path, *argv: str, env: Mapping[str, str] | None = None, stderr: Any = PIPE
) -> subprocess.Popen[str]:
    """``python argv...`` seeing the unpacked wheel first, then this environment's
    third-party packages, and nothing else: no ``site`` (whose .pth files would put the
    editable install's repository back on the path), no script or working directory.
    ``env`` adds variables; ``stderr`` as for Popen (a long-running program's belongs
    in a file, so that a full pipe cannot stall it)."""
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(site), sysconfig.get_paths()["purelib"]]),
        "PYTHONDONTWRITEBYTECODE": "1",
        **(env or {}),
    }
    return subprocess.Popen(
        [sys.executable, "-S", "-P", *argv],
        cwd=cwd,
        env=environment,
        stdout=PIPE,
        stderr=stderr,
        text=True,
    )


def write_console_scripts(site: Path, bin_dir: Path) -> None:
    """What pip writes into ``bin_dir`` for each console script of the wheel in ``site``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, ep in console_scripts(site).items():
        (bin_dir / name).write_text(
            f"import sys\nfrom {ep.module} import {ep.attr}\nsys.exit({ep.attr}())\n"
        )


def image_root(site: Path, root: Path, dockerfile: Path) -> dict[str, Path]:
    """Under ``root``, the final stage's ``/opt/venv/bin`` (the console scripts of the
    wheel unpacked in ``site``) and its links; returns link -> path, as
    :func:`make_stage_links`."""
    write_console_scripts(site, root / "opt" / "venv" / "bin")
    return make_stage_links(dockerfile_stages(dockerfile)[-1], root=root)


def stage_env(stage: list[str]) -> dict[str, str]:
    """The variables the stage's ``ENV KEY=VALUE ...`` instructions set."""
    env: dict[str, str] = {}
    for instruction in stage[1:]:
        keyword, _, rest = instruction.partition(" ")
        if keyword.upper() != "ENV":
            continue
        for word in shlex.split(rest):
            key, equals, value = word.partition("=")
            if not equals:
                raise ValueError(f"ENV {rest}: only the KEY=VALUE form is implemented")
            env[key] = value
    return env


def pruned_from_venv(stage: list[str]) -> tuple[set[str], set[str]]:
    """(distributions, module paths) the stage's ``RUN`` instructions remove after the
    install: the arguments of each ``pip uninstall --yes``, and each ``rm -r`` of a
    directory under ``site-packages`` as a dotted module path."""
    distributions: set[str] = set()
    modules: set[str] = set()
    for instruction in stage[1:]:
        keyword, _, rest = instruction.partition(" ")
        if keyword.upper() != "RUN":
            continue
        for command in rest.split("&&"):
            words = shlex.split(command)
            if words[1:3] == ["uninstall", "--yes"] and words[0].endswith("pip"):
                distributions.update(words[3:])
            elif words[:2] == ["rm", "-r"]:
                for path in words[2:]:
                    _, found, inside = path.partition("/site-packages/")
                    if found:
                        modules.add(inside.strip("/").replace("/", "."))
    return distributions, modules
