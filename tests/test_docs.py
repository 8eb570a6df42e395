"""The repository explains itself: its prose points only at files it holds.

Prose is the Markdown files (README, ``docs/``) and, in Python, the docstrings and
comments. A reader who follows a pointer to a file the repository does not have (a
planning note kept beside a checkout, a path on one machine) is left with nothing, and
a link that breaks when a file moves says the docs went stale without anyone noticing.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROSE_DIRS = ("docs", "ersctl", "examples", "ghalistener", "tests", ".ci")
SKIPPED_DIRS = {"__pycache__", ".venv", ".git"}

# A Markdown file named outside a URL (``docs/runbook.md``, ``README.md``): the
# repository's docs are Markdown, so a name like this must be one of them.
MARKDOWN_NAME = re.compile(r"(?<![\w.:/@-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
# Directories no checkout has: notes kept beside the repository, a machine's work tree.
OUTSIDE_DIR = re.compile(r"(?<![\w./-])(?:(?:shared|reference)/|/work/)")
# A Markdown link or image whose target has no scheme: a file of the repository.
RELATIVE_LINK = re.compile(r"!?\[[^\]]*\]\((?![a-z][a-z0-9+.-]*:)([^)\s]+)\)")


def repository_files() -> list[Path]:
    found = [ROOT / name for name in ("README.md", "pyproject.toml", "Dockerfile", ".dockerignore")]
    for top in PROSE_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(ROOT).parts):
                found.append(path)
    return [path for path in found if path.is_file()]


def markdown_files() -> list[Path]:
    return [path for path in repository_files() if path.suffix == ".md"]


def python_prose(text: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python source."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                yield node.body[0].lineno, docstring


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of what ``path`` says in words: a Markdown file whole, a Python
    source's comments and docstrings, the ``#`` comment lines of any other text file."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return
    if ".md" not in text and not OUTSIDE_DIR.search(text):
        return  # nothing to look at: most files are not parsed
    if path.suffix == ".py":
        yield from python_prose(text)
    elif path.suffix == ".md":
        yield 1, text
    else:
        lines = enumerate(text.splitlines(), start=1)
        yield from ((n, line) for n, line in lines if line.lstrip().startswith("#"))


def names_a_repository_file(name: str, source: Path, files: set[str]) -> bool:
    """``name`` is a repository path (from the root or ``source``'s directory) or the
    tail of one (``runnerset/reconciler.py`` for the module in ``ersctl/``)."""
    beside = (source.parent / name).resolve()
    if beside.is_relative_to(ROOT) and str(beside.relative_to(ROOT)) in files:
        return True
    return name in files or any(f.endswith("/" + name) for f in files)


def pointers_outside(path: Path, files: set[str]) -> list[str]:
    where = path.relative_to(ROOT)
    found = []
    for line, text in prose(path):
        found += [f"{where}:{line}: {m.group(0)}" for m in OUTSIDE_DIR.finditer(text)]
        found += [
            f"{where}:{line}: {m.group(1)}"
            for m in MARKDOWN_NAME.finditer(text)
            if not names_a_repository_file(m.group(1), path, files)
        ]
    return found


def test_no_docstring_comment_or_doc_points_at_a_file_outside_the_repository() -> None:
    everything = repository_files()
    files = {str(path.relative_to(ROOT)) for path in everything}
    outside = [pointer for path in everything for pointer in pointers_outside(path, files)]
    assert outside == []


def github_anchor(heading: str) -> str:
    """The fragment GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", markdown.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {github_anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def broken_links(markdown: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", markdown.read_text(encoding="utf-8"), flags=re.DOTALL)
    broken = []
    for match in RELATIVE_LINK.finditer(text):
        target, _, fragment = match.group(1).partition("#")
        resolved = (markdown.parent / target).resolve() if target else markdown
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            broken.append(f"{markdown.relative_to(ROOT)}: {match.group(1)} (no such file)")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{markdown.relative_to(ROOT)}: {match.group(1)} (no such heading)")
    return broken


@pytest.mark.parametrize("markdown", markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_of_the_repository(markdown: Path) -> None:
    assert broken_links(markdown) == []


def test_the_docs_are_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {m.group(1).partition("#")[0] for m in RELATIVE_LINK.finditer(readme)}
    docs = {f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")}
    assert docs and docs <= linked
