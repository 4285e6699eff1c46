"""Docstrings and comments in ``settlement_widgets/`` cite only what a reader of the repository
can open (issue 33).

The package was written from reference documents that are not part of the repository (a
design note, a protocol reference per Nitrolite version, a performance study, a description
of the original dashboard, a style guide, a spec with numbered sections). Citing them sent the
reader nowhere, so the facts stay and the citations name the upstream source instead
(e.g. "Nitrolite v1.4.1 ``ChannelHub.sol``", ``erc7824/faucet-app``, ``hashpass-tech/jack``)
or a test or module of this repository. This test reads every comment and string literal
(docstrings included) and fails on a citation of such a document.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = ROOT / "settlement_widgets"

# The documents behind the package that are not in the repository, by the names they were
# cited with, plus the ways of citing a section of one ("§4.2", "spec §", "the spec's").
OUTSIDE = re.compile(
    r"§"
    r"|erc7824-nitrolite|nitrolite-v1\.md|performance-floor|original-dashboard"
    r"|style-anchors|style-examples|toolchain-notes|design-card|settlement-methods-spec"
    r"|custody-abi-selectors|channelhub-abi|sdk-oracle|ORACLE\.md"
    r"|\bDESIGN\b|\breference/|\bshared/"
    r"|\bspec's\b|\bthe spec\b|\bSpec\b"
)
MARKDOWN = re.compile(r"[\w./-]+\.md\b")


def _repository_markdown() -> set[str]:
    """Names of the Markdown files a reader of the repository can open."""
    names = set()
    for path in ROOT.rglob("*.md"):
        parts = path.relative_to(ROOT).parts
        if any(p.startswith(".") or p == "node_modules" for p in parts):
            continue
        names.add(path.name)
    return names


def _texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and string literal of a module."""
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING):
            yield token.start[0], token.string


def _citations(text: str, markdown: set[str]) -> list[str]:
    found = [match.group(0) for match in OUTSIDE.finditer(text)]
    found += [name for name in MARKDOWN.findall(text) if name.rsplit("/", 1)[-1] not in markdown]
    return found


def test_no_docstring_or_comment_cites_a_document_outside_the_repository() -> None:
    markdown = _repository_markdown()
    offenders = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if "_artifacts" in path.relative_to(PACKAGE_DIR).parts:
            continue
        for line, text in _texts(path):
            for citation in _citations(text, markdown):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {citation!r}")
    assert not offenders, (
        "cite the upstream source or a file of this repository instead:\n" + "\n".join(offenders)
    )


def test_the_check_knows_a_citation_when_it_sees_one() -> None:
    markdown = {"README.md"}
    assert _citations("the relay (erc7824-nitrolite.md §3.4)", markdown) == [
        "erc7824-nitrolite",
        "§",
        "erc7824-nitrolite.md",
    ]
    assert _citations("(spec §2.6)", markdown) == ["§"]
    assert _citations("(DESIGN principle 6)", markdown) == ["DESIGN"]
    assert _citations("see NOTES.md", markdown) == ["NOTES.md"]
    assert _citations("see README.md, Nitrolite v1.4.1 ``ChannelHub.sol``", markdown) == []
    assert _citations("spec = transition; for spec in specs", markdown) == []
