"""The docs stay true to the code: the algorithm tables in docs/collectives.md are exactly what
``commbench list --markdown`` prints from the registry, the README links to them, and every
relative link in README.md and docs/*.md points to a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

from bench.commands.listing import markdown
from tests.conftest import ROOT

DOCS = ROOT / "docs"
TABLES = DOCS / "collectives.md"
BEGIN = "<!-- BEGIN commbench list --markdown -->"
END = "<!-- END commbench list --markdown -->"
# Being written by another change: a link to it is allowed while the file does not exist yet.
MAY_BE_MISSING = {DOCS / "gate.md"}
# [text](target) and [text]: target, outside code
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:\s*(\S+)", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def _generated_block(text: str) -> str:
    assert text.count(BEGIN) == 1 and text.count(END) == 1, f"{TABLES}: one {BEGIN} ... {END} pair"
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    assert start < stop, f"{TABLES}: {END} before {BEGIN}"
    return text[start:stop].removeprefix("\n")


def test_collective_tables_match_the_registry() -> None:
    block = _generated_block(TABLES.read_text(encoding="utf-8"))
    assert block == markdown(), (
        "docs/collectives.md's tables differ from the registry: paste the output of "
        "`commbench list --markdown` between the markers")


def test_readme_links_to_the_collective_tables() -> None:
    targets = [t.split("#")[0] for t in _links(ROOT / "README.md")]
    assert "docs/collectives.md" in targets


def _links(path: Path) -> list[str]:
    text = CODE_SPAN.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))
    return [a or b for a, b in LINK.findall(text)]


def _relative(target: str) -> bool:
    return not (re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")))


def test_every_relative_link_points_to_a_file() -> None:
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    assert len(pages) > 1, "docs/*.md missing"
    broken = []
    for page in pages:
        for target in filter(_relative, _links(page)):
            dest = (page.parent / target.split("#")[0]).resolve()
            if not dest.exists() and dest not in MAY_BE_MISSING:
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links to missing files:\n" + "\n".join(broken)


def test_the_link_finder_sees_links() -> None:
    """Guards the regexes above: a checker that finds no links passes everything."""
    sample = DOCS / "index.md"
    assert any(_relative(t) for t in _links(sample)), f"no relative links found in {sample}"
