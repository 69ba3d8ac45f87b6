"""Every citation in the repository resolves inside it: each "protocol §N.M" names a numbered heading of
docs/protocol.md, and nothing cites the design notes, the platform notes or a file outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / 'docs' / 'protocol.md'
SEARCHED = ('robofollow_ros', 'config', 'launch', 'bench', 'tools', 'test', 'docs', 'scripts', 'README.md')
CODE = ('robofollow_ros', 'config', 'launch', 'bench', 'tools', 'test', 'scripts')
SUFFIXES = {'.py', '.md', '.yaml', '.yml', '.xml', '.tsv', '.txt', '.sh', '.cfg', '.toml'}

SECTION = r'§\s?\d+(?:\.\d+)*'
CITATION = re.compile(rf'protocol\s+{SECTION}(?:\s*(?:,|/|-|–|and)\s*§?\s?\d+(?:\.\d+)*)*', re.IGNORECASE)
"""A protocol citation, with the sections chained to it: "protocol §1.7, §2.0", "protocol §4.3-4.6"."""
NUMBER = re.compile(r'\d+(?:\.\d+)*')
HEADING = re.compile(r'^#{2,6}\s+(\d+(?:\.\d+)*)\.?\s', re.MULTILINE)
DOC_CITATION = re.compile(r'(docs/[\w-]+\.md) §\s?(\d+(?:\.\d+)*)')
"""A section of another document of the repository: "docs/cell.md §4"."""
BARE = re.compile(r'(?<!\.md )' + SECTION)
OUTSIDE = re.compile(r'DESIGN\s*§|platform[ -]notes|\.\./shared|/work/shared|benchmark-protocol\.md', re.IGNORECASE)
"""Documents that are not in the repository (the project's design notes, the machine's notes, the reference)."""


def _files(roots: tuple[str, ...]) -> list[Path]:
    found = []
    for name in roots:
        root = ROOT / name
        paths = [root] if root.is_file() else sorted(root.rglob('*'))
        found += [
            path for path in paths if path.is_file() and path.suffix in SUFFIXES and '__pycache__' not in path.parts
        ]
    return [path for path in found if path.resolve() != Path(__file__).resolve()]


def _text(path: Path) -> str:
    return path.read_text(encoding='utf-8', errors='replace')


def _keep_lines(match: re.Match[str]) -> str:
    return '\n' * match.group(0).count('\n')


def cited_sections(text: str) -> list[str]:
    """Every section number a "protocol §..." citation in ``text`` names."""
    return [number for match in CITATION.finditer(text) for number in NUMBER.findall(match.group(0))]


def numbered_sections(path: Path) -> set[str]:
    """The section numbers of a Markdown file's headings ("## 4. Scoring" is 4, "#### 9.2.1 ..." is 9.2.1)."""
    return set(HEADING.findall(_text(path)))


def protocol_sections() -> set[str]:
    """The numbered sections of docs/protocol.md."""
    return numbered_sections(PROTOCOL)


def test_citation_pattern_reads_chains_and_ranges() -> None:
    text = 'seeds (protocol §1.7, §2.0); scorers (protocol §4.3-4.6); Protocol §2.4: spawn; see §8 of cell.md'
    assert cited_sections(text) == ['1.7', '2.0', '4.3', '4.6', '2.4']


def test_protocol_document_is_in_the_repository() -> None:
    assert PROTOCOL.is_file(), 'docs/protocol.md is missing: every "protocol §" citation dangles'
    sections = protocol_sections()
    # The top-level sections and the scoring sections the referee is built from.
    assert {'1', '2', '4', '5', '8', '9'} <= sections
    assert {f'4.{k}' for k in range(1, 11)} <= sections


def test_every_protocol_citation_resolves() -> None:
    sections = protocol_sections() if PROTOCOL.is_file() else set()
    dangling = [
        f'{path.relative_to(ROOT)}: protocol §{number}'
        for path in _files(SEARCHED)
        for number in cited_sections(_text(path))
        if number not in sections
    ]
    assert not dangling, 'citations without a numbered heading in docs/protocol.md:\n' + '\n'.join(dangling)


def test_every_citation_of_another_document_resolves() -> None:
    dangling = [
        f'{path.relative_to(ROOT)}: {doc} §{number}'
        for path in _files(SEARCHED)
        for doc, number in DOC_CITATION.findall(_text(path))
        if not (ROOT / doc).is_file() or number not in numbered_sections(ROOT / doc)
    ]
    assert not dangling, 'citations of sections that do not exist:\n' + '\n'.join(dangling)


def test_code_cites_sections_by_document() -> None:
    # In code a bare "§8.1" leaves the reader guessing which document it means; docs may cite their own sections.
    bare = []
    for path in _files(CODE):
        for number, line in enumerate(CITATION.sub(_keep_lines, _text(path)).splitlines(), start=1):
            if BARE.search(line):
                bare.append(f'{path.relative_to(ROOT)}:{number}: {line.strip()}')
    assert not bare, 'section signs without "protocol" before them:\n' + '\n'.join(bare)


def test_nothing_cites_documents_outside_the_repository() -> None:
    outside = [
        f'{path.relative_to(ROOT)}:{number}: {line.strip()}'
        for path in _files(SEARCHED)
        for number, line in enumerate(_text(path).splitlines(), start=1)
        if OUTSIDE.search(line)
    ]
    assert not outside, 'citations of documents outside the repository:\n' + '\n'.join(outside)
