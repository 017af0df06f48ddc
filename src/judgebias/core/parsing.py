"""Read a judge's reply into a positional verdict: "A" (first shown), "B" (second shown), "tie" or "invalid".

The parser never guesses. A guess is not noise: a rule such as "take the first label mentioned" turns an
unreadable reply into a preference for one position, which is the very bias this project measures. So a
reply that names both labels as the choice, names neither, or contradicts itself is "invalid", and invalid
replies are counted and reported by the caller instead of being hidden in a tie or a default.

Pure logic, no I/O. One small reader per style:

- ``label``: the judge was asked for one of the two labels (or the tie word); replies are read defensively
  (case, markdown, "Response A", "I pick A", "Final answer: B", "It's a tie", a line holding only the label).
- ``brackets``: MT-Bench's ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (tie) tokens.
- ``llmbar``: LLMBar's "Output (a)" / "Output (b)", possibly after a chain of thought.
- ``pandalm``: PandaLM's first line ``1`` / ``2`` / ``Tie``, then a reason.
- ``arenahard``: Arena-Hard-Auto's five-point verdicts ``[[A>>B]]``, ``[[A>B]]``, ``[[A=B]]``, ``[[B>A]]``,
  ``[[B>>A]]`` (``[A>B]`` when no double-bracket token is found), read for their direction only.

Open-weight reasoning models served without a reasoning parser (Qwen3, DeepSeek-R1, gpt-oss on vLLM, Ollama or
llama.cpp) write their thinking into the reply: ``<think>...</think>`` then the answer, or gpt-oss's
``<|channel|>analysis ... <|channel|>final<|message|>`` answer. The verdict is read from the answer only, never from
the thinking (which weighs both answers and names both labels); a reply that is all thinking (cut off before
``</think>``) has no answer and is "invalid".

Free text (``label`` and ``llmbar``) is read as a set of *claims*: a label in a choice-like context
("Output (b) is better", "I choose A", "verdict: B", a line holding only the label, "both are equally
good"). A claim negated in its clause ("neither ... nor B is better", "if A is better") does not count.
*Decisive* claims are direct choices, verdict lines, conclusions ("Therefore, ...") and unqualified
"X is better"; claims such as "A is better in terms of detail" are reasoning. The decisive claims (or, when
there are none, all claims) must name a single verdict, otherwise the reply is "invalid". So
"A is better in detail ... Therefore, B is better." is "B", while "A ... actually B" is "invalid".
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal

Verdict = Literal["A", "B", "tie", "invalid"]
Side = Literal["A", "B", "tie"]
STYLES: Final[tuple[str, ...]] = ("label", "brackets", "llmbar", "pandalm", "arenahard")

_FLAGS: Final = re.IGNORECASE | re.MULTILINE

# A sentence: text up to ".", "!" or "?" followed by a space, or up to the end of the line. A match never
# starts inside a run of punctuation (it could not succeed there), so many dots are read in linear time.
_SENTENCE: Final = re.compile(r"(?:(?<![.!?])|(?![.!?]))(?:[^.!?\n]|[.!?]+(?=[^\s.!?]))+[.!?]*")
# How far back in its sentence a claim looks for a negation or a conclusion marker (real sentences are shorter).
_LOOKBACK: Final = 1000
_CLAUSE_BREAK: Final = re.compile(r"[,;:()\u2014]|\s-\s")
_WORD: Final = re.compile(r"[A-Za-z']+")
_NEGATIONS: Final = frozenset(
    {"not", "never", "neither", "nor", "if", "whether", "unless", "cannot", "can't", "couldn't", "don't"}
    | {"doesn't", "didn't", "isn't", "wasn't", "won't", "wouldn't", "shouldn't", "hardly", "without"}
)
_CONCLUSION: Final = (
    r"(?:therefore|thus|hence|so|overall|in\s+conclusion|in\s+summary|to\s+conclude|to\s+sum\s+up|"
    r"ultimately|finally|consequently|as\s+a\s+result|in\s+the\s+end|all\s+in\s+all|all\s+things\s+"
    r"considered|based\s+on\b[^,\n]{0,120}|considering\b[^,\n]{0,120}|for\s+these\s+reasons|"
    r"for\s+this\s+reason|given\b[^,\n]{0,120}|final(?:ly)?\s+(?:verdict|answer|decision))"
)
_REVISION: Final = (
    r"(?:actually|wait|no|sorry|correction|on\s+second\s+thought|instead|rather|i\s+mean|make\s+that|oops)"
)
_MARKER: Final = re.compile(rf"\b(?:{_CONCLUSION}|{_REVISION})\b", re.IGNORECASE)
# Decoration around a label standing alone on its line; a heading ("# Output (a):") is not a verdict.
_OPEN: Final = r"[ \t\"'`*_(\[{<>|~\u201c\u2018\u300c\u3010\uff08-]*"
_CLOSE: Final = r"[ \t\"'`*_)\]}>|.!?~\u201d\u2019\u300d\u3011\uff09\u3002-]*"
_JOIN: Final = r"[ \t,:*_\"'`-]*"
_TERMINAL: Final = r"(?=[^\n]*[.!\u3002])"
# What may follow "X is better" for it to be an unqualified choice rather than a partial remark.
_UNQUALIFIED_TAIL: Final = re.compile(
    r"[\W_]*(?:$|(?:because|since|as|due\s+to|overall|here|than|for\s+(?:the|this)\s+(?:given\s+)?"
    r"(?:instruction|task|question|prompt|request))\b)",
    re.IGNORECASE,
)
_NON_WORD: Final = re.compile(r"[\W_]*")
# Words that may follow a single-character label in running text; any other lowercase word after "A" or
# "a" means it is the article.
_AFTER_BARE: Final = (
    r"(?:is|was|wins|won|because|since|as|and|but|for|over|than|here|overall|seems|appears|would|should|"
    r"clearly|definitely|obviously|provides|gives|offers|has|does|did|answers|responds|which|while|with|"
    r"by|in|on|at|to|please|though|however|also|too|only|alone|again|instead|now|then|or|vs)"
)
_PREFIX: Final = (
    r"(?:response|answer|assistant|output|option|candidate|model|completion|summary|reply|submission|"
    r"system|text|choice)"
)
# Answer nouns in other languages, read only when a line holds nothing but such a mention.
_FOREIGN_PREFIX: Final = (
    r"(?:respuesta|r[ée]ponse|antwort|resposta|risposta|antwoord|odpowied[zź]|ответ|вариант|"
    r"回答|答案|回复|選項|选项|応答|解答|답변|응답)"
)
_ADVERB: Final = (
    r"(?:clearly|slightly|significantly|much|far|definitely|marginally|overall|also|generally|still|"
    r"certainly|obviously|somewhat|a\s+bit|the|a|an|way|evidently|indeed)"
)
_BETTER: Final = r"(?:better|superior|preferred|preferable|stronger|best|winner)"
_WORSE: Final = r"(?:worse|inferior|weaker)"
_CHOOSE: Final = (
    r"(?:choose|chose|chosen|choosing|pick|picked|picking|select|selected|selecting|prefer|preferring|"
    r"favou?r|favou?ring|go(?:ing)?\s+with|went\s+with|vote\s+for|voting\s+for|opt\s+for|recommend|"
    r"declare|award)"
)
_NOUN: Final = r"(?:answer|response|output|one|option|choice|assistant|candidate|reply|completion|model)"
_VERDICT_WORD: Final = (
    r"(?:verdict|choice|decision|winner|selection|preference|judge?ment|(?:the|my|final)\s+answer|"
    r"final\s+(?:result|call)|conclusion)"
)
# "Verdict: B", "**Final answer:** B", and "Answer: B" at the start of a line.
# `^` then decoration on the same line only: `[\W_]*` would run over every following newline, at every line start.
_VERDICT_IS: Final = rf"(?:\b{_VERDICT_WORD}|^(?:(?!\n)[\W_])*answer)[*_]*\s*(?:is|:|=|-|would\s+be)[\s*_\"'`]*"
_EQUAL: Final = (
    r"(?:equally\s+(?:good|strong|helpful|valid|acceptable|appropriate|effective|useful|correct|accurate|"
    r"suitable|relevant|competent|well)|of\s+(?:equal|the\s+same)\s+quality|equivalent\s+in\s+quality)"
)


@dataclass(frozen=True, slots=True)
class _Claim:
    side: Side
    start: int
    decisive: bool


@dataclass(frozen=True, slots=True)
class _Pattern:
    """A claim pattern: for a fixed `side`, or for the label group ("A" or "B") that matched."""

    regex: re.Pattern[str]
    kind: Literal["better", "choice", "bare"]
    side: Side | None = None
    reverse: bool = False  # "X is worse": a claim for the other answer

    def side_of(self, match: re.Match[str]) -> Side:
        if self.side is not None:
            return self.side
        if match.groupdict().get("T") is not None:
            return "tie"
        named: Side = "A" if match.group("A") is not None else "B"
        if self.reverse:
            return "B" if named == "A" else "A"
        return named


@dataclass(frozen=True, slots=True)
class _Grammar:
    """The label-dependent regexes of one (labels, tie word) pair, compiled once per pair."""

    patterns: tuple[_Pattern, ...]
    fences: tuple[re.Pattern[str], ...]


def parse_reply(
    text: str | None, *, style: str, labels: tuple[str, str] = ("A", "B"), tie_label: str = "tie"
) -> Verdict:
    """Return the positional verdict of a reply: "A" (first shown), "B" (second shown), "tie" or "invalid".

    `labels` are the labels shown for the first and second answer (any two labels that differ ignoring
    case); the result is positional whatever their text. `tie_label` is the word offered for a tie. The
    ``pandalm`` style has a fixed vocabulary (``1``, ``2``, ``Tie``) and does not use `labels`.
    """
    reader = _READERS.get(style)
    if reader is None:
        raise ValueError(f"unknown reply style {style!r}; expected one of {', '.join(STYLES)}")
    first, second, tie = labels[0].strip(), labels[1].strip(), tie_label.strip()
    if not (first and second and tie):
        raise ValueError("labels and tie_label must be non-empty")
    if len({first.casefold(), second.casefold(), tie.casefold()}) != 3:
        raise ValueError(f"labels {labels!r} and tie_label {tie_label!r} must differ (ignoring case)")
    if text is None:
        return "invalid"
    if "think>" in text or "<|channel|>" in text:
        text = answer_part(text)
    if not text.strip():
        return "invalid"
    return reader(text, (first, second), tie)


_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"\s*<think>", re.IGNORECASE)
_HARMONY_FINAL = "<|channel|>final<|message|>"
_HARMONY_END = re.compile(r"<\|(?:return|end)\|>\s*$")


def answer_part(text: str) -> str:
    """The answer of a reply that carries its reasoning inline: what follows the last ``</think>`` (or gpt-oss's
    final channel); "" when the reply opens a ``<think>`` block it never closes (the budget ran out thinking)."""
    final = text.rfind(_HARMONY_FINAL)
    if final >= 0:
        return _HARMONY_END.sub("", text[final + len(_HARMONY_FINAL) :])
    if "<|channel|>" in text and "<|channel|>analysis" in text:
        return ""  # gpt-oss thinking only: no final channel yet
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        return text[closes[-1].end() :]
    if _THINK_OPEN.match(text):
        return ""
    return text


# ---------------------------------------------------------------- label style


def _read_label(text: str, labels: tuple[str, str], tie_label: str) -> Verdict:
    # A reply that is exactly one label (the common case for a short rubric) needs no grammar: answer it
    # without compiling the label-dependent patterns, which costs tens of milliseconds at start-up.
    bare = text.strip().strip(".*\"'`").casefold()
    if bare == labels[0].casefold():
        return "A"
    if bare == labels[1].casefold():
        return "B"
    if bare == tie_label.casefold():
        return "tie"
    return _read_claims(text, _label_grammar(labels, tie_label))


@lru_cache(maxsize=256)
def _label_grammar(labels: tuple[str, str], tie_label: str) -> _Grammar:
    first, second = (_label_forms(label) for label in labels)
    patterns = _claim_patterns((first[0], second[0]), (first[1], second[1]), tie_label)
    patterns.append(_Pattern(re.compile(_either(first[2], second[2]), _FLAGS), "choice"))
    fences = tuple(
        re.compile(
            rf"\[\s*the\s+(?:start|end)\s+of\s+[^\]\n]*?{_token(label, strict=False)}[^\]\n]*\]"
            rf"|^[ \t]*#+[ \t]*(?:{_PREFIX}[ \t]*)?\(?{_token(label, strict=False)}\)?[ \t]*:?[ \t]*$",
            _FLAGS,
        )
        for label in labels
    )
    return _Grammar(tuple(patterns), fences)


def _label_forms(label: str) -> tuple[str, str, str]:
    """How a label is mentioned in prose, alone on a line, and as an emphasised verdict ("[[A]]")."""
    strict, loose = _token(label, strict=True), _token(label, strict=False)
    wrapped = rf"(?:\(\s*{loose}\s*\)|\[\s*{loose}\s*\])"
    mention = rf"{_PREFIX}\s*(?:{wrapped}|{strict})|\[\[\s*{loose}\s*\]\]|\*\*\s*{loose}\s*\*\*|{wrapped}|{strict}"
    bare = rf"(?:(?:{_PREFIX}|{_FOREIGN_PREFIX})\s*[:\uff1a]?\s*)?(?:{wrapped}|{loose})"
    emphasised = rf"\[\[\s*{loose}\s*\]\]|[:\uff1a]\s*\*\*\s*(?:{_PREFIX}\s*)?(?:{wrapped}|{loose})\s*\*\*{_CLOSE}$"
    return mention, bare, emphasised


def _either(first: str, second: str) -> str:
    """A regex matching either label's form, in the named group "A" (first shown) or "B" (second shown)."""
    return f"(?:(?P<A>{first})|(?P<B>{second}))"


def _token(label: str, *, strict: bool) -> str:
    """The label as a standalone token.

    A single-character label is `strict` in running text: case-sensitive, and not followed by an ordinary
    lowercase word, so the article in "a good answer" is not label "A". Inside brackets, after "Output (",
    or alone on a line, case does not matter.
    """
    body = re.escape(label)
    before, after = _boundary(label[0], behind=True), _boundary(label[-1], behind=False)
    if strict and len(label) == 1:
        if label.isalpha():
            body = f"(?-i:{body})"
        after += rf"(?!\s+(?!{_AFTER_BARE}\b)(?-i:[a-z]))"
    return f"{before}{body}{after}"


def _boundary(char: str, *, behind: bool) -> str:
    if not char.isalnum():
        return ""
    cls = "[A-Za-z0-9]" if char.isascii() else r"[^\W_]"
    return f"(?<!{cls})" if behind else f"(?!{cls})"


def _claim_patterns(mentions: tuple[str, str], bares: tuple[str, str], tie_label: str) -> list[_Pattern]:
    """Claims for either label, given how each is mentioned in prose and alone on a line, and for a tie."""
    mention, bare = _either(*mentions), _either(*bares)
    tie = rf"(?:tie|draw|{_token(tie_label, strict=False)})"
    tail = rf"(?:(?:'s)?\s+{_NOUN})?\s*(?:is|was|seems|appears|would\s+be|remains)?\s*(?:{_ADVERB}\s+){{0,3}}"
    choice = (
        rf"(?:\b{_CHOOSE}\s+(?:the\s+)?|\b(?:{_BETTER}|winning)\s+{_NOUN}\s+(?:here\s+)?(?:is|was|would\s+be|:|=|-)\s*"
        rf"|{_VERDICT_IS})(?:{mention}|(?:a\s+)?(?P<T>{tie})\b)"
    )
    it_is_a_tie = r"\b(?:it'?s|it\s+is|this\s+is|that'?s|i\s+(?:call|declare)\s+(?:it|this))\s+a\s+(?:tie|draw)\b"
    equal = rf"\b(?:are|were|seem|appear|perform)\s+(?:both\s+)?{_EQUAL}\b(?!\s+(?:at|in\s+terms))"
    return [
        _Pattern(re.compile(rf"{mention}{tail}{_BETTER}\b", _FLAGS), "better"),
        _Pattern(re.compile(rf"{mention}\s+(?:wins|won|outperforms|is\s+the\s+winner)\b", _FLAGS), "better"),
        _Pattern(re.compile(rf"{mention}{tail}{_WORSE}\b", _FLAGS), "better", reverse=True),
        _Pattern(re.compile(choice, _FLAGS), "choice"),
        _Pattern(re.compile(rf"^{_OPEN}(?:{_REVISION}{_JOIN})?{bare}{_CLOSE}$", _FLAGS), "bare"),
        _Pattern(re.compile(rf"^{_OPEN}{_CONCLUSION}{_JOIN}{bare}{_TERMINAL}{_CLOSE}$", _FLAGS), "bare"),
        _Pattern(
            re.compile(
                rf"^{_OPEN}(?:(?:{_CONCLUSION}|{_REVISION}){_JOIN})?(?:it'?s\s+a\s+|it\s+is\s+a\s+)?{tie}{_CLOSE}$",
                _FLAGS,
            ),
            "bare",
            side="tie",
        ),
        _Pattern(re.compile(it_is_a_tie, _FLAGS), "choice", side="tie"),
        _Pattern(re.compile(equal, _FLAGS), "better", side="tie"),
    ]


# ---------------------------------------------------------------- claims (label and llmbar)


def _read_claims(text: str, grammar: _Grammar) -> Verdict:
    claims = _claims(text, grammar)
    pool = [claim for claim in claims if claim.decisive] or claims
    sides = {claim.side for claim in pool}
    if len(sides) != 1:
        return "invalid"
    if all(fence.search(text) for fence in grammar.fences):
        # The reply copies the prompt: the verdict must come after the copied answers.
        last_fence = max(match.end() for fence in grammar.fences for match in fence.finditer(text))
        if pool[-1].start < last_fence:
            return "invalid"
    return pool[-1].side


def _claims(text: str, grammar: _Grammar) -> list[_Claim]:
    sentences = [(match.start(), match.end()) for match in _SENTENCE.finditer(text)]
    starts = [start for start, _ in sentences]
    found: dict[tuple[int, str], _Claim] = {}
    for pattern in grammar.patterns:
        for match in pattern.regex.finditer(text):
            side = pattern.side_of(match)
            index = max(bisect.bisect_right(starts, match.start()) - 1, 0)
            s_start, s_end = sentences[index] if sentences else (0, len(text))
            before = text[max(s_start, match.start() - _LOOKBACK) : match.start()]
            if (match.start(), side) in found or _negated(before):
                continue
            span = (s_start, match.start(), match.end(), s_end)
            decisive = pattern.kind in ("choice", "bare") or _decisive(text, span, tie=side == "tie")
            found[(match.start(), side)] = _Claim(side, match.start(), decisive)
    return sorted(found.values(), key=lambda claim: claim.start)


def _negated(before: str) -> bool:
    clause = _CLAUSE_BREAK.split(before)[-1]
    return any(word.lower() in _NEGATIONS for word in _WORD.findall(clause)[-4:])


def _decisive(text: str, span: tuple[int, int, int, int], *, tie: bool) -> bool:
    """A conclusion ("Therefore, X is better"), an unqualified "X is better because ...", or a tie.

    `span` is (sentence start, claim start, claim end, sentence end); matching in place instead of on slices
    keeps a long reply of many claims in one sentence linear.
    """
    s_start, start, end, s_end = span
    if _MARKER.search(text, max(s_start, start - _LOOKBACK), start):
        return True
    opens_sentence = tie or _NON_WORD.fullmatch(text, s_start, start) is not None
    return opens_sentence and _UNQUALIFIED_TAIL.match(text, end, s_end) is not None


# ---------------------------------------------------------------- llmbar style


def _read_llmbar(text: str, labels: tuple[str, str], tie_label: str) -> Verdict:
    return _read_claims(text, _llmbar_grammar(labels, tie_label))


@lru_cache(maxsize=64)
def _llmbar_grammar(labels: tuple[str, str], tie_label: str) -> _Grammar:
    first, second = (_token(label, strict=False) for label in labels)
    patterns = _claim_patterns(
        (rf"output\s*\(\s*{first}\s*\)", rf"output\s*\(\s*{second}\s*\)"),
        (
            rf"(?:output\s*)?\(\s*{first}\s*\)|output\s+{first}|{first}",
            rf"(?:output\s*)?\(\s*{second}\s*\)|output\s+{second}|{second}",
        ),
        tie_label,
    )
    fences = tuple(
        re.compile(rf"^[ \t]*#+[ \t]*output[ \t]*\([ \t]*{_token(label, strict=False)}[ \t]*\)[ \t]*:?[ \t]*$", _FLAGS)
        for label in labels
    )
    return _Grammar(tuple(patterns), fences)


# ---------------------------------------------------------------- brackets style

# A token quoting the answer format ('"[[A]]" if assistant A is better, ...') rather than giving a verdict.
_ECHO_TAIL: Final = re.compile(r"[\"'\u201d*`]*\s*(?:if\b|when\b|means\b|indicates\b|=|stands\s+for\b)", re.I)
# "[[C]] for a tie" is a verdict, unless it ends such a quoted list.
_TIE_ECHO_TAIL: Final = re.compile(r"[\"'\u201d*`]*\s*for\s+(?:a\s+)?tie\b", re.IGNORECASE)
_COMPARATIVE: Final = re.compile(
    r"\b(?:better|superior|stronger|preferable|preferred|outperforms?|more\s+(?:complete|accurate|helpful|"
    r"detailed|relevant|correct|comprehensive|thorough|precise|useful|informative|appropriate|insightful))\b",
    re.IGNORECASE,
)
_REVERSE_COMPARATIVE: Final = re.compile(r"\b(?:worse|inferior|weaker)\b", re.IGNORECASE)
_Found = list[tuple[re.Match[str], Side]]


def _read_brackets(text: str, labels: tuple[str, str], tie_label: str) -> Verdict:
    """Every ``[[X]]`` token that is not a quote of the format must agree, sentence by sentence.

    A sentence naming two different tokens counts only as a comparison ("[[B]] is better than [[A]]", for
    its subject); any other disagreement (a verdict per question, tokens used as names) is "invalid".
    """
    token = _bracket_token(labels, tie_label)
    starts = [match.start() for match in _SENTENCE.finditer(text)]
    by_sentence: dict[int, _Found] = {}
    for match in token.finditer(text):
        index = max(bisect.bisect_right(starts, match.start()) - 1, 0)
        by_sentence.setdefault(index, []).append((match, _bracket_side(match.group(1), labels)))
    votes = {_sentence_vote(text, _without_format_quote(text, found)) for found in by_sentence.values()}
    votes.discard(None)
    if len(votes) != 1:
        return "invalid"
    return votes.pop() or "invalid"


@lru_cache(maxsize=64)
def _bracket_token(labels: tuple[str, str], tie_label: str) -> re.Pattern[str]:
    words = [*labels, tie_label]
    if "c" not in {label.casefold() for label in labels}:
        words.append("C")
    alternatives = "|".join(re.escape(word) for word in words)
    return re.compile(rf"\[\[\s*({alternatives})\s*\]\]", re.IGNORECASE)


def _bracket_side(found: str, labels: tuple[str, str]) -> Side:
    if found.casefold() == labels[0].casefold():
        return "A"
    if found.casefold() == labels[1].casefold():
        return "B"
    return "tie"


def _without_format_quote(text: str, found: _Found) -> _Found:
    """Drop the tokens of a quoted answer format: two or more different tokens each followed by "if ..."."""
    quoted = {side for match, side in found if _ECHO_TAIL.match(text, match.end())}
    if len(quoted) < 2:
        return found
    return [
        (match, side)
        for match, side in found
        if not (_ECHO_TAIL.match(text, match.end()) or _TIE_ECHO_TAIL.match(text, match.end()))
    ]


def _sentence_vote(text: str, found: _Found) -> Verdict | None:
    """The verdict of one sentence's tokens; None when it has none left."""
    sides = {side for _, side in found}
    if len(sides) <= 1:
        return sides.pop() if sides else None
    (first, first_side), (second, second_side) = next(
        pair for pair in itertools.pairwise(found) if pair[0][1] != pair[1][1]
    )
    between = text[first.end() : second.start()]
    if len(between) <= 160:
        if _COMPARATIVE.search(between):
            return first_side
        if _REVERSE_COMPARATIVE.search(between):
            return second_side
    return "invalid"


# ---------------------------------------------------------------- pandalm style

_PANDALM_FIRST_LINE: Final = re.compile(rf"{_OPEN}(1|2|0|tie){_CLOSE}", re.IGNORECASE)
_PANDALM_VERDICTS: Final[dict[str, Verdict]] = {"1": "A", "2": "B", "0": "tie", "tie": "tie"}


def _read_pandalm(text: str, labels: tuple[str, str], tie_label: str) -> Verdict:
    """The first non-empty line is the verdict (``1``, ``2``, ``Tie``; ``0`` is PandaLM's stored tie code).

    The reason that follows may not contradict it: "1" then "Response 2 is better ..." is "invalid".
    """
    del labels, tie_label
    first_line, _, reason = text.strip().partition("\n")
    match = _PANDALM_FIRST_LINE.fullmatch(first_line.strip())
    if match is None:
        return "invalid"
    verdict = _PANDALM_VERDICTS[match.group(1).casefold()]
    stated = _read_claims(reason, _label_grammar(("1", "2"), "tie"))
    if stated not in ("invalid", verdict):
        return "invalid"
    return verdict


# ---------------------------------------------------------------- arenahard style

# "A>>B", "A>B", "A=B", "B>A", "B>>A" and their mirrored spellings ("A<B" is "B>A").
_FIVE_POINT: Final = r"([AB])\s*(>>|<<|>|<|=)\s*([AB])"
_FIVE_POINT_DOUBLE: Final = re.compile(rf"\[\[\s*{_FIVE_POINT}\s*\]\]", re.IGNORECASE)
_FIVE_POINT_SINGLE: Final = re.compile(rf"(?<!\[)\[\s*{_FIVE_POINT}\s*\](?!\])", re.IGNORECASE)
# A line of the answer format quoted back ("1. Assistant A is significantly better: [[A>>B]]"), not a verdict.
_FIVE_POINT_ECHO: Final = re.compile(
    r"^[ \t]*\d\.\s*(?:assistant\s+[ab]\s+is|tie,)[^\n]*:\s*\[\[?[^\]\n]*\]\]?\s*$", _FLAGS
)


def five_point_direction(token: str) -> Side | None:
    """The side a five-point verdict favours ("A", "B" or "tie"), None when it is not one (e.g. "A>A")."""
    match = re.fullmatch(_FIVE_POINT, token.strip(), re.IGNORECASE)
    if match is None:
        return None
    left, sign, right = match.group(1).upper(), match.group(2), match.group(3).upper()
    if left == right:
        return None
    if sign == "=":
        return "tie"
    winner = left if sign in (">", ">>") else right
    return "A" if winner == "A" else "B"


def _quoted_scale(text: str) -> list[tuple[int, int]]:
    """Where the reply quotes the answer format's scale back: runs of two or more of its lines together. One such
    line alone is the verdict, written as an item of the scale ("my final verdict is:\n\n5. Assistant B is
    significantly better: [[B>>A]]"), as Arena-Hard's own reading takes it."""
    lines = list(_FIVE_POINT_ECHO.finditer(text))
    runs: list[list[re.Match[str]]] = []
    for line in lines:
        if runs and not text[runs[-1][-1].end() : line.start()].strip():
            runs[-1].append(line)
        else:
            runs.append([line])
    return [(run[0].start(), run[-1].end()) for run in runs if len(run) >= 2]


def _read_arenahard(text: str, labels: tuple[str, str], tie_label: str) -> Verdict:
    """Every five-point token outside a quoted format line must favour the same side.

    Arena-Hard's own extractor keeps the last token whatever came before; here a reply that states two
    directions ("[[A>B]] ... on reflection [[B>A]]") is "invalid", as in the other styles.
    """
    del labels, tie_label
    echoes = _quoted_scale(text)

    def outside(match: re.Match[str]) -> bool:
        return not any(start <= match.start() < end for start, end in echoes)

    tokens = [m for m in _FIVE_POINT_DOUBLE.finditer(text) if outside(m)]
    if not tokens:
        tokens = [m for m in _FIVE_POINT_SINGLE.finditer(text) if outside(m)]
    sides = {five_point_direction(m.group(0).strip("[] ")) for m in tokens}
    if len(sides) != 1 or None in sides:
        return "invalid"
    (side,) = sides
    assert side is not None
    return side


_READERS: Final[dict[str, Callable[[str, tuple[str, str], str], Verdict]]] = {
    "label": _read_label,
    "brackets": _read_brackets,
    "llmbar": _read_llmbar,
    "pandalm": _read_pandalm,
    "arenahard": _read_arenahard,
}
