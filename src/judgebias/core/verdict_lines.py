"""verdicts.jsonl's line, declared once (LINE): each member's name and place, its type and bounds, the value read
when a line lacks it, and whether it is read back into the item's row. The reader's record (`LineRecord`: the
row-making members, decoded and checked in one step), the row it makes (by name: ItemResult's fields are LINE's row
members) and the check of every line written (`WrittenLine`: every member, nothing else) are made from it; the
writer fills it in LINE's order, each member only when it applies, and msgspec encodes it.

The reader decodes only the members a row is made of: the calls' texts (`raw1`, `raw2`, ...) are skipped unread, so
a line of a 16 MB reply costs what a line of a short one does. A member of the wrong type, a label outside its
vocabulary, a length beyond what a row can hold: a LineProblem naming the member. Pure: the caller reads or writes
the file and names the line of a problem.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from dataclasses import fields
from typing import Annotated, Any, Literal, NamedTuple, get_args

import msgspec

from judgebias.core.bounds import LENGTH
from judgebias.core.judged import calls_by_order, majority_verdict
from judgebias.core.record import CallResult, ItemResult, new_item_result
from judgebias.core.style import Style
from judgebias.core.verdict import Outcome, Positional, item_pick, item_winner

Length = Annotated[int, msgspec.Meta(ge=LENGTH.low, le=LENGTH.high)]
HumanLabel = Literal["1", "2", "tie"]
UNSET: Any = msgspec.UNSET  # a member a line does not have
NO_CLUSTER: Any = UNSET  # a line without "cluster"
REQUIRED: Any = object()  # a member the reader refuses a line without


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


class Member(NamedTuple):
    """One member of a line: its name, the type a reader accepts (with its bounds), the value read when a line does
    not have it (REQUIRED: every line has it), and whether the item's row (ItemResult) holds it."""

    name: str
    type: Any
    default: Any = None
    row: bool = False


def _read(name: str, members: Sequence[Member], *, strict: bool = False) -> type[msgspec.Struct]:
    """A record of these members, each checked as it is decoded (REQUIRED: the line must have it; `strict`: and
    nothing else)."""
    fields = [(m.name, m.type) if m.default is REQUIRED else (m.name, m.type, m.default) for m in members]
    return msgspec.defstruct(name, fields, kw_only=True, forbid_unknown_fields=strict)


# A call's members, numbered by its order (raw1 for the call with a shown first, raw2 for the other): the reply
# and its cache flag on every line that has calls, the rest only when set, in this order (CallResult's attributes).
CALL_REPLY = (Member("raw", str | None), Member("cached", bool | None))
CALL_OPTIONAL = (
    Member("error", str),  # why the call failed after its retries
    Member("failure", str),  # the kind of that failure: rate_limit | transient | timeout | unreachable | ...
    Member("probs", dict[str, float]),  # positional label -> probability, when log-probabilities were returned
    Member("labels", list[str | None]),  # the random tags shown (rubric.labels=tags)
    Member("outcome", str),  # a reply without a verdict: refusal | content_filter | tool_calls | truncated | ...
    Member("reason", str),  # why that reply carries no verdict
    Member("model", str),  # the model the reply names
    Member("answered_by", str),  # the deployment (or model) that answered
    Member("origin", dict[str, Any]),  # what the server reported of the reply's origin
)


def _numbered(index: int) -> tuple[Member, ...]:
    return tuple(member._replace(name=f"{member.name}{index}") for member in (*CALL_REPLY, *CALL_OPTIONAL))


# One judge's calls on one item: inline in its line, or an ensemble line's `judges` entry (then with its verdict).
CALLS = (
    Member("call1", Positional, REQUIRED, row=True),  # the reply with a shown first
    Member("call2", Positional | None, None, row=True),  # b shown first, NOT translated; null: no order
    Member("consistent", bool | None, None, row=True),  # both orders agree after translation
    Member("pick1", str | None),  # call1 read in the item's frame: "a" | "b" | "tie" | "invalid" | "error"
    Member("pick2", str | None),  # call2 read in the item's frame (translated back); null when absent
    *_numbered(1),
    *_numbered(2),
)

# An ensemble line's entry for one judge: its calls, then its own verdict.
JudgeEntry = _read("JudgeEntry", [*CALLS, Member("verdict", Outcome, REQUIRED)], strict=True)

LINE = (
    Member("id", Annotated[str, msgspec.Meta(min_length=1)], REQUIRED, row=True),
    Member("verdict", Outcome, REQUIRED, row=True),  # "1" | "2" | "tie" | "error"
    Member("winner", Literal["a", "b", "tie", "error"]),  # the verdict read in the item's frame
    *CALLS,
    Member("human", HumanLabel | None, None, row=True),
    Member("human_votes", tuple[str, ...], (), row=True),  # individual annotator votes in the item frame
    Member("human_voters", tuple[str, ...], (), row=True),  # who gave each vote
    Member("model_a", str | None, None, row=True),  # both or neither
    Member("model_b", str | None, None, row=True),
    Member("chars_a", Length, 0, row=True),
    Member("chars_b", Length, 0, row=True),
    Member("words_a", Length, 0, row=True),
    Member("words_b", Length, 0, row=True),
    Member("tokens_a", Length | None, None, row=True),  # in tokens of data.normalize.tokenizer (absent: words)
    Member("tokens_b", Length | None, None, row=True),
    Member("style_a", StyleCounts | None, None, row=True),  # markdown feature counts of a as written
    Member("style_b", StyleCounts | None, None, row=True),
    Member("soft", Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None, None, row=True),  # P(a), from logprobs
    Member("samples", list[dict[str, Any]]),  # judge.samples > 1: every ask (order, sample, call, pick, raw, cached)
    Member("majority", str),  # judge.samples > 1: the verdict of each order's majority of samples
    Member("judges", dict[str, JudgeEntry]),  # type: ignore[valid-type]  # ensemble runs: every judge's calls and verdict
    Member("cluster", Any, NO_CLUSTER),  # the item's value of bootstrap.cluster's field, whenever it has one
)


LineRecord = _read("LineRecord", [m for m in LINE if m.row or m.name == "cluster"])  # what a row is made of
# Every member, none unknown: what a line this module writes decodes as (the tests hold the writer to it).
WrittenLine = _read("WrittenLine", LINE, strict=True)
MEMBER_ORDER = {m.name: number for number, m in enumerate(LINE)}  # a line's members are written in this order

ROW_MEMBERS = tuple(m.name for m in LINE if m.row)
# The reader's members are the row's fields: the row is made by name, so the two declarations cannot drift apart.
assert set(ROW_MEMBERS) == {f.name for f in fields(ItemResult) if f.name != "calls"}, "a row field is not in LINE"
_ROW_VALUES = operator.attrgetter(*ROW_MEMBERS)


class LineProblem(ValueError):
    """A verdict line that is not what judgebias writes: the field and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"field {field!r}: {reason}" if field else reason)
        self.field = field


# ------------------------------------------------------------------------------------------------ writing

_ENCODER = msgspec.json.Encoder()


def encoded(record: dict[str, Any]) -> bytes:
    """A line's text, as json.dumps(..., ensure_ascii=False) writes its content: ", " and ": " between members,
    text beyond ASCII as it is, numbers in Python's own form (Raw members, below)."""
    return msgspec.json.format(_ENCODER.encode(record), indent=0)


def line_of(
    row: ItemResult,
    calls: Sequence[CallResult] | None = None,
    *,
    with_calls: bool = True,
    cluster: object = NO_CLUSTER,
    judges: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One item's line: the row's verdict, its calls (the replies from `calls` when given, else from the row's),
    its labels, models, lengths and formatting, each only when it applies; an ensemble line has its judges' calls
    under `judges` instead (with_calls=False). Its members in LINE's order: a dict, encoded as it is (a msgspec
    record with a default for every member a line may lack costs more to make than the whole dict)."""
    members: dict[str, Any] = {
        "id": row.id,
        "verdict": row.verdict,
        "winner": item_winner(row.verdict),
        "call1": row.call1,
        "call2": row.call2,
        "consistent": row.consistent,
    }
    replies = row.calls if calls is None else tuple(calls)
    if with_calls:
        _add_calls(members, row, replies)
    if row.human is not None:
        members["human"] = row.human
    if row.human_votes:
        members["human_votes"] = row.human_votes
    if row.human_voters:
        members["human_voters"] = row.human_voters
    if row.model_a is not None or row.model_b is not None:
        members["model_a"] = row.model_a
        members["model_b"] = row.model_b
    members["chars_a"] = row.chars_a
    members["chars_b"] = row.chars_b
    members["words_a"] = row.words_a
    members["words_b"] = row.words_b
    if row.tokens_a is not None and row.tokens_b is not None:
        members["tokens_a"] = row.tokens_a
        members["tokens_b"] = row.tokens_b
    if row.style_a is not None and row.style_b is not None:
        if row.style_a is not _last_styles[0] or row.style_b is not _last_styles[1]:
            _last_styles[:] = row.style_a, row.style_b, _counts(row.style_a), _counts(row.style_b)
        members["style_a"] = _last_styles[2]
        members["style_b"] = _last_styles[3]
    if row.soft is not None:
        members["soft"] = _number(row.soft)
    if with_calls and (len(replies) > 2 or any(call.sample for call in replies)):
        _add_samples(members, row, replies)
    if judges is not None:
        members["judges"] = judges
    if cluster is not NO_CLUSTER:
        members["cluster"] = exact(cluster)
    return members


def judge_of(row: ItemResult, calls: Sequence[CallResult] | None = None) -> dict[str, Any]:
    """One judge's entry in an ensemble line: its calls, then its own verdict."""
    members: dict[str, Any] = {"call1": row.call1, "call2": row.call2, "consistent": row.consistent}
    _add_calls(members, row, row.calls if calls is None else tuple(calls))
    members["verdict"] = row.verdict
    return members


# Each call's numbered members: its reply's and cache flag's, then each optional one's (attribute, member).
_NUMBERED = tuple(
    (f"raw{index}", f"cached{index}", tuple((m.name, f"{m.name}{index}") for m in CALL_OPTIONAL)) for index in (1, 2)
)
# Each optional member's value on a call; `labels`, a property, is read as `tag_first`, which is set with it.
_OPTIONAL_VALUES = operator.attrgetter(*(m.name if m.name != "labels" else "tag_first" for m in CALL_OPTIONAL))
_NONE_SET = (None,) * len(CALL_OPTIONAL)
_FLOATS = frozenset({"probs", "origin"})  # optional members whose numbers are written in Python's own form


def _add_calls(members: dict[str, Any], row: ItemResult, calls: tuple[CallResult, ...]) -> None:
    """pick1/pick2, raw1/raw2, cached1/cached2, and errors, probabilities, tags and origins where present."""
    members["pick1"] = _PICKS[row.call1, 1]
    members["pick2"] = _PICKS[row.call2, 2]
    first, second = _first_samples(calls)
    if (first is None or not first.offline) or (second is not None and not second.offline):
        _add_call(members, _NUMBERED[0], first)
        _add_call(members, _NUMBERED[1], second)
        return
    known = _OFFLINE_MEMBERS.get((id(first), id(second)))
    if known is None:
        made: dict[str, Any] = {}
        _add_call(made, _NUMBERED[0], first)
        _add_call(made, _NUMBERED[1], second)
        known = (first, second, made)
        if len(_OFFLINE_MEMBERS) < _OFFLINE_KEPT:
            _OFFLINE_MEMBERS[id(first), id(second)] = known
    members.update(known[2])


# The members of a free judge's two calls, by the calls' identities: a scripted judge answers a million items with a
# handful of shared CallResult objects (engine.judging.ParsedReplies). Each entry keeps its calls alive, so an identity
# in it is never another object's; read only.
_OFFLINE_MEMBERS: dict[tuple[int, int], tuple[CallResult, CallResult | None, dict[str, Any]]] = {}
_OFFLINE_KEPT = 1024
# A reply's pick in the item's frame, by reply and order (item_pick of every value a row's call1/call2 can hold).
_PICKS = {(call, order): item_pick(call, order) for call in (*get_args(Positional), None) for order in (1, 2)}


def _add_call(
    members: dict[str, Any], names: tuple[str, str, tuple[tuple[str, str], ...]], call: CallResult | None
) -> None:
    """One call's numbered members: its reply and cache flag (null for an order without a call), then each optional
    member that is set, in CALL_OPTIONAL's order."""
    raw, cached, optional = names
    if call is None:
        members[raw] = members[cached] = None
        return
    members[raw] = call.raw
    members[cached] = call.cached
    values = _OPTIONAL_VALUES(call)
    if values == _NONE_SET:
        return  # the usual call: nothing else to say
    for (attribute, name), value in zip(optional, values, strict=True):
        if value:  # present only when set
            members[name] = call.labels if attribute == "labels" else exact(value) if attribute in _FLOATS else value


def _first_samples(calls: tuple[CallResult, ...]) -> tuple[CallResult | None, CallResult | None]:
    """The single-sample call of each order (None: that order has none); `samples` holds the rest."""
    if len(calls) == 2 and not calls[0].sample and not calls[1].sample:
        return calls[0], calls[1]  # the usual item: two calls, one of each order
    first = [call for call in calls if call.sample == 0]
    return (first[0] if first else None), (first[1] if len(first) > 1 else None)


def _add_samples(members: dict[str, Any], row: ItemResult, calls: tuple[CallResult, ...]) -> None:
    """judge.samples > 1: every ask of each order (`samples`) and the verdict of their majority (`majority`)."""
    majority = majority_verdict(row)
    groups = calls_by_order(calls)
    if majority is None or groups is None:
        return
    members["samples"] = [
        {
            "order": order,
            "sample": call.sample,
            "call": call.label,
            "pick": item_pick(call.label, order),
            "raw": call.raw,
            "cached": call.cached,
        }
        for order, group in enumerate(groups, start=1)
        for call in group
    ]
    members["majority"] = majority


# The last two styles written and their text: most lines' answers share one pair of Style objects (plain text), so
# the pair is told by identity (it is kept here, so an identity is never another object's) before any hashing.
_last_styles: list[Any] = [None, None, None, None]


@functools.lru_cache(maxsize=1024)
def _counts(style: Style) -> msgspec.Raw:
    """An answer's counts (StyleCounts) as written, encoded once per distinct style (most answers share a few)."""
    counts = StyleCounts(style.headers, style.list_items, style.bold, style.italic, style.code_blocks, style.tables)
    return msgspec.Raw(_ENCODER.encode(counts))


def _number(value: float) -> msgspec.Raw:
    """A float as json.dumps writes it (Python's repr: 1e-05, not 0.00001); NaN and infinities are refused, as
    json.dumps(allow_nan=False) refuses them."""
    if not math.isfinite(value):
        raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
    return msgspec.Raw(float.__repr__(value).encode())


def exact(value: Any) -> Any:
    """A value whose floats are written as json.dumps writes them (in dicts and lists too); others as they are."""
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, dict):
        return {key: exact(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [exact(inner) for inner in value]
    return value


# ------------------------------------------------------------------------------------------------ reading

_DECODER = msgspec.json.Decoder(LineRecord)


def record_of_line(text: bytes | str) -> Any:
    """One line's record (LineRecord), or a LineProblem naming the field (or saying the line is not a JSON object)."""
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


def _raise(field: str, reason: str) -> Any:
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


def result_of_record(record: Any) -> ItemResult:
    """The item's row as the run decided it (its calls' texts stay in the line), member by member."""
    values = dict(zip(ROW_MEMBERS, _ROW_VALUES(record), strict=True))
    values["style_a"] = _style(values["style_a"])
    values["style_b"] = _style(values["style_b"])
    return new_item_result(**values, calls=())


def result_of_line(text: bytes | str) -> ItemResult:
    """The row of one verdicts.jsonl line's text; a LineProblem names the field that is wrong."""
    return result_of_record(record_of_line(text))
