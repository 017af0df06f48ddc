"""verdicts.jsonl read back: what a line holds of its item's row, declared once as a typed record, decoded and
checked in one step (msgspec), for figures computed after the run (a paired comparison of two runs).

Only the fields a row is made of are declared: the calls' texts (`raw1`, `raw2`, ...) are skipped unread, so a line
of a 16 MB reply costs what a line of a short one does. A field of the wrong type, a label outside its vocabulary,
a length beyond what a row can hold: a LineProblem naming the field. Pure: the caller reads the file and names the
line of a problem.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from judgebias.core.bounds import LENGTH
from judgebias.core.record import ItemResult, new_item_result
from judgebias.core.style import Style
from judgebias.core.verdict import Outcome, Positional

Length = Annotated[int, msgspec.Meta(ge=LENGTH.low, le=LENGTH.high)]
HumanLabel = Literal["1", "2", "tie"]
NO_CLUSTER: Any = msgspec.UNSET  # a line without "cluster"


class StyleCounts(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An answer's markdown feature counts (`style_a`, `style_b`): every feature, nothing else."""

    headers: Length
    list_items: Length
    bold: Length
    italic: Length
    code_blocks: Length
    tables: Length

    def style(self) -> Style:
        """The same counts as the Style the run recorded."""
        return Style(self.headers, self.list_items, self.bold, self.italic, self.code_blocks, self.tables)


class LineRecord(msgspec.Struct, kw_only=True):
    """The row-making fields of one verdicts.jsonl line (every other field is skipped)."""

    id: Annotated[str, msgspec.Meta(min_length=1)]
    verdict: Outcome
    call1: Positional
    call2: Positional | None = None
    consistent: bool | None = None
    human: HumanLabel | None = None
    human_votes: tuple[str, ...] = ()
    human_voters: tuple[str, ...] = ()
    model_a: str | None = None
    model_b: str | None = None
    chars_a: Length = 0
    chars_b: Length = 0
    words_a: Length = 0
    words_b: Length = 0
    tokens_a: Length | None = None
    tokens_b: Length | None = None
    soft: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None = None
    style_a: StyleCounts | None = None
    style_b: StyleCounts | None = None
    cluster: Any = NO_CLUSTER  # the item's value of the run's cluster field, when its intervals resampled clusters


class LineProblem(ValueError):
    """A verdict line that is not what judgebias writes: the field and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"field {field!r}: {reason}" if field else reason)
        self.field = field


_DECODER = msgspec.json.Decoder(LineRecord)


def record_of_line(text: bytes | str) -> LineRecord:
    """One line's record, or a LineProblem naming the field (or saying the line is not a JSON object)."""
    try:
        return _DECODER.decode(text)
    except msgspec.ValidationError as error:
        message = str(error)
        reason, at, path = message.partition(" - at `$.")
        if at:
            return _raise(path.rstrip("`").split(".")[0].split("[")[0], _reworded(reason))
        if message.startswith("Object missing required field `"):
            return _raise(message.split("`")[1], "missing")
        return _raise("", "not a verdict line (a JSON object)" if "Expected `object`" in message else message)
    except msgspec.DecodeError as error:
        return _raise("", f"not valid JSON ({error})")


def _raise(field: str, reason: str) -> LineRecord:
    raise LineProblem(field, reason)


def _reworded(reason: str) -> str:
    """msgspec's reason in the words of judgebias's other errors."""
    if reason.startswith("Invalid enum value "):
        return f"{reason.removeprefix('Invalid enum value ')} is not one of the values judgebias writes"
    return reason[0].lower() + reason[1:]


# The Style of each recorded count seen (rows share a few): one object each, as the run itself keeps them.
_STYLES: dict[StyleCounts, Style] = {}
_STYLES_KEPT = 4096


def _style(counts: StyleCounts | None) -> Style | None:
    if counts is None:
        return None
    style = _STYLES.get(counts)
    if style is None:
        style = counts.style()
        if len(_STYLES) < _STYLES_KEPT:
            _STYLES[counts] = style
    return style


def result_of_record(record: LineRecord) -> ItemResult:
    """The item's row as the run decided it (its calls' texts stay in the line)."""
    return new_item_result(
        id=record.id,
        verdict=record.verdict,
        call1=record.call1,
        call2=record.call2,
        consistent=record.consistent,
        human=record.human,
        human_votes=record.human_votes,
        human_voters=record.human_voters,
        model_a=record.model_a,
        model_b=record.model_b,
        chars_a=record.chars_a,
        chars_b=record.chars_b,
        words_a=record.words_a,
        words_b=record.words_b,
        tokens_a=record.tokens_a,
        tokens_b=record.tokens_b,
        soft=record.soft,
        style_a=_style(record.style_a),
        style_b=_style(record.style_b),
        calls=(),
    )


def result_of_line(text: bytes | str) -> ItemResult:
    """The row of one verdicts.jsonl line's text; a LineProblem names the field that is wrong."""
    return result_of_record(record_of_line(text))
