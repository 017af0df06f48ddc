"""The formatting of an answer: counts of its markdown features, and the answer rendered as plain text.

Pure and line-based, after CommonMark and GitHub's tables, so that what a judge would see rendered is what is
counted: text inside a fenced code block or an inline code span is code, not formatting (a `# comment` line in
a Python block is no header, `**kwargs` in backticks is no bold). Indented code blocks are not recognised: an
indented line is read as the continuation or nesting of a list, the far more common case in answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# The features, in the order they are reported (verdicts.jsonl, style_coefficients, the report).
FEATURES = ("headers", "list_items", "bold", "italic", "code_blocks", "tables")

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")  # any indent: answers indent fences inside list items
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_QUOTE = re.compile(r"^ {0,3}>[ \t]?")
_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+(?=\S)|[ \t]*$)")  # a lone marker: an empty item
_DELIMITER = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_BOLD = re.compile(r"\*\*(?=[^\s*])(.+?)(?<=[^\s])\*\*|(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])")
_ITALIC = re.compile(r"\*(?=[^\s*])(.+?)(?<=[^\s*])\*|(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])")
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]\n]*)\]\(([^)\s]*)(?:[ \t]+\"[^\"\n]*\")?\)")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
# Every feature needs one of these: `#` or a setext underline (`=`, `-`) for a header, a list marker (`-*+`, or a
# digit before `.`/`)`), `*`/`_` for emphasis, a fence (backticks, `~`), a table's `|`. Text without any is plain.
# A character that starts markup, or a numbered list's "1." / "1)": two searches, each one pass in C, where one
# pattern with both tried the alternation at every character (twice as long on plain answers).
_MARKUP_CHAR = re.compile(r"[#=*_+|`~-]")
_NUMBERED = re.compile(r"\d[.)]")
# Characters of the private-use area stand in for escaped characters and code spans while emphasis is read.
_HOLD = "\ue000"


@dataclass(frozen=True, slots=True)
class Style:
    """How much markdown formatting one answer carries: counts of each feature."""

    headers: int = 0  # ATX (`## Title`) and setext (`Title` over `===`/`---`) headings
    list_items: int = 0  # bulleted and numbered items, nested ones included
    bold: int = 0  # `**strong**` / `__strong__` spans
    italic: int = 0  # `*emphasis*` / `_emphasis_` spans
    code_blocks: int = 0  # fenced blocks (``` or ~~~); inline code spans are not counted
    tables: int = 0  # GitHub tables (a header row over a `---|---` delimiter row)

    def as_dict(self) -> dict[str, int]:
        """The verdicts.jsonl object, in FEATURES order (written per answer: built directly, not by asdict)."""
        return {
            "headers": self.headers,
            "list_items": self.list_items,
            "bold": self.bold,
            "italic": self.italic,
            "code_blocks": self.code_blocks,
            "tables": self.tables,
        }

    @property
    def total(self) -> int:
        """All features together: 0 means the answer is plain text."""
        return self.headers + self.list_items + self.bold + self.italic + self.code_blocks + self.tables


def _plain(text: str) -> bool:
    """Whether the text has nothing any feature starts with (most answers): one search instead of reading every line."""
    return _MARKUP_CHAR.search(text) is None and _NUMBERED.search(text) is None


def styles_of(a: str, b: str) -> tuple[Style, Style]:
    """The Styles of two answers: both plain found in one search of each pattern (a line end between them, which
    neither pattern can match across), as most answers are."""
    if _plain(a + "\n" + b):
        return PLAIN, PLAIN
    return style_of(a), style_of(b)


def style_of(text: str) -> Style:
    """Count the markdown features of one answer (code inside fences is not formatting)."""
    if _plain(text):
        return PLAIN
    counts = dict.fromkeys(FEATURES, 0)
    for kind, line in _blocks(text):
        if kind == "inline":
            bold, italic = _emphasis(line)
            counts["bold"] += bold
            counts["italic"] += italic
        elif kind in counts:
            counts[kind] += 1
    return _shared(*counts.values())


@lru_cache(maxsize=4096)
def _shared(*counts: int) -> Style:
    """One Style object per distinct set of counts: most answers share a few (plain text: all zeros), and every
    row the metrics keep holds two."""
    return Style(*counts)


PLAIN = _shared(*(0 for _ in FEATURES))  # the Style of an answer without any markdown


def strip_markdown(text: str) -> str:
    """The answer as plain text: markup removed, words, code and cell contents kept, one item per line."""
    # Headings keep their text, list items lose their markers (each stays on its own line), table rows become
    # cells joined by " | " without the delimiter row, fences go but their code stays, emphasis and code
    # spans keep their text, links become "text (url)". Runs of blank lines shrink to one.
    out: list[str] = []
    for kind, line in _blocks(text, render=True):
        if kind not in ("inline", "code"):  # feature markers and markup-only lines
            continue
        out.append(line if kind == "code" else _plain_inline(line))
    joined = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", joined).strip()


def _blocks(text: str, *, render: bool = False) -> list[tuple[str, str]]:
    """Classify each line: (kind, inline text). Kinds are feature names, "inline", "code" and markup lines.

    A feature line (header, list item) is followed by an "inline" entry of its text, so emphasis is counted
    everywhere but in code. With render=True the entries carry what strip_markdown keeps of each line.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[tuple[str, str]] = []
    fence: str | None = None
    paragraph = False  # the previous line is paragraph text (a setext underline may follow)
    index = 0
    while index < len(lines):
        raw = lines[index]
        index += 1
        if fence is not None:
            closing = _FENCE.match(raw)
            marker = closing.group(1) if closing else ""
            if closing and marker[0] == fence[0] and len(marker) >= len(fence) and not closing.group(2).strip():
                fence = None
                out.append(("fence", ""))
            else:
                out.append(("code", raw))
            continue
        line = raw
        while _QUOTE.match(line):
            line = _QUOTE.sub("", line, count=1)
        opening = _FENCE.match(line)
        if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            fence = opening.group(1)
            out += [("code_blocks", ""), ("fence", "")]
            paragraph = False
            continue
        if not line.strip():
            out.append(("inline", ""))
            paragraph = False
            continue
        if paragraph and _SETEXT.match(line) and not _ITEM.match(line):
            out += [("headers", ""), ("setext", "")]
            paragraph = False
            continue
        if _BREAK.match(line):
            out.append(("break", ""))
            paragraph = False
            continue
        heading = _ATX.match(line)
        if heading:
            out += [("headers", ""), ("inline", heading.group(2) or "")]
            paragraph = False
            continue
        if "|" in line and index < len(lines) and _DELIMITER.match(lines[index]) and "|" in lines[index]:
            index += 1  # the delimiter row
            out += [("tables", ""), ("inline", _cells(line) if render else line)]
            while index < len(lines) and "|" in lines[index] and lines[index].strip():
                out.append(("inline", _cells(lines[index]) if render else lines[index]))
                index += 1
            paragraph = False
            continue
        item = _ITEM.match(line)
        if item:
            content = line[item.end() :]
            while nested := _ITEM.match(content):  # "- 1. step": an item that opens with another item
                out.append(("list_items", ""))
                content = content[nested.end() :]
            out += [("list_items", ""), ("inline", content)]
            paragraph = False
            continue
        out.append(("inline", line.rstrip()))  # indentation kept: in unfenced code it is content
        paragraph = True
    return out


def _cells(row: str) -> str:
    """A table row as its cells joined by " | " (no outer pipes)."""
    cells = row.strip()
    if cells.startswith("|"):
        cells = cells[1:]
    if cells.endswith("|") and not cells.endswith("\\|"):
        cells = cells[:-1]
    return " | ".join(cell.strip() for cell in cells.split("|"))


def _held(text: str) -> tuple[str, list[str]]:
    """The text with escaped characters and code spans replaced by placeholders, and what they stand for."""
    kept: list[str] = []

    def hold(value: str) -> str:
        kept.append(value)
        return _HOLD + str(len(kept) - 1) + _HOLD

    text = _ESCAPE.sub(lambda m: hold(m.group(1)), text)
    text = _CODE_SPAN.sub(lambda m: hold(m.group(2).strip() or m.group(2)), text)
    return text, kept


def _restored(text: str, kept: list[str]) -> str:
    """Put back what _held took out."""
    return re.sub(_HOLD + r"(\d+)" + _HOLD, lambda m: kept[int(m.group(1))], text)


def _emphasis(text: str) -> tuple[int, int]:
    """(bold spans, italic spans) in one line of text, code spans and escapes left out."""
    text, _ = _held(text)
    text, bold = _BOLD.subn(_unwrap, text)  # unwrapped, so ***both*** leaves *both* for the italic count
    return bold, len(_ITALIC.findall(text))


def _unwrap(match: re.Match[str]) -> str:
    """The text inside an emphasis span (the pattern has one group per delimiter kind)."""
    return match.group(1) if match.group(1) is not None else match.group(2)


def _plain_inline(text: str) -> str:
    """One line of inline markdown as plain text."""
    text, kept = _held(text)
    text = _ITALIC.sub(_unwrap, _BOLD.sub(_unwrap, text))

    def link(match: re.Match[str]) -> str:
        label, url = match.group(1), match.group(2)
        if match.group(0).startswith("!") or not url or label == url:
            return label or url
        return f"{label} ({url})" if label else url

    text = _IMAGE_OR_LINK.sub(link, text)
    text = _AUTOLINK.sub(lambda m: m.group(1), text)
    return _restored(text, kept)
