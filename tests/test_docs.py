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


DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
COMMIT = re.compile(r"\bcommit [0-9a-f]{7,40}\b|\(commit [0-9a-f]{7,40}|\b[0-9a-f]{7,40}\b(?=[,;)])")
# a benchmark's module after -m (python -m X, torchrun's -m X), under its name or an old one
# (bench.perf.X, bench.gate.*sensitivity, reports.bench_render)
BENCHMARK = re.compile(r"-m ((?:benchmarks|bench\.perf|reports)\.\w+|bench\.gate\.\w*sensitivity)")


def test_docs_hold_no_dated_measurements_or_commits() -> None:
    """Docs are the reference: measurements with their dates and commits live in
    benchmarks/results/, which the docs link to."""
    found = [f"{p.name}:{i}: {line.strip()[:80]}" for p in sorted(DOCS.glob("*.md"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if DATE.search(line) or COMMIT.search(line)]
    assert not found, "dates or commit hashes in docs/:\n" + "\n".join(found)


def test_every_benchmark_command_named_in_the_docs_exists() -> None:
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    named = {(p.name, m.group(1)) for p in pages for m in BENCHMARK.finditer(p.read_text("utf-8"))}
    bad = [f"{page}: -m {module}" for page, module in named
           if not module.startswith("benchmarks.")
           or not (ROOT / "benchmarks" / f"{module.rsplit('.', 1)[1]}.py").is_file()]
    assert named and not bad, "benchmark commands that do not exist:\n" + "\n".join(bad)


def test_the_date_and_commit_finders_find_them() -> None:
    """Guards the regexes above on the forms the docs used to hold."""
    assert DATE.search("**Measured** (2026-12-01, commit 96b70b2, 2-core VM")
    assert COMMIT.search("with OSU 7.4's source, at commit 4849d94. Times in µs")
    assert not COMMIT.search("commit the run directories as the baselines")
    assert BENCHMARK.search("--nproc-per-node 2 -m bench.perf.training_overhead").group(1) == \
        "bench.perf.training_overhead"


def test_the_index_lists_every_page() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    listed = {t.split("#")[0] for t in re.findall(r"^\| \[[^\]]+\]\(([^)]+)\)", index, re.M)}
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert pages <= listed, f"docs/index.md does not list {sorted(pages - listed)}"
