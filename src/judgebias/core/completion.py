"""A judge asked through the completions endpoint: the prompt it continues, and its verdict from the first token.

A base model does not follow chat instructions (through a chat template it echoes the prompt), but it continues
text: a prompt ending in the rubric's answer cue ("The better answer is Answer") is continued with a label
(" A"), and the first generated token's top log-probabilities are the judge's preference between the labels.
Tokenizers put the space before a word into its token, so " A", "A" and " a" all stand for the label "A".

Pure logic, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from judgebias.core.parsing import Verdict

_DECORATION = "[]()*.:,;!\"'`"
_VERDICTS: tuple[Verdict, Verdict, Verdict] = ("A", "B", "tie")


def render_completion_prompt(messages: Sequence[Mapping[str, str]], cue: str) -> str:
    """One prompt from the rubric's chat messages (system text first), ending in the answer cue."""
    parts = [message["content"].strip() for message in messages if message["content"].strip()]
    return "\n\n".join([*parts, cue]) if cue else "\n\n".join(parts)


def bare_token(token: str) -> str:
    """A token as a label candidate: without its leading space, surrounding brackets or punctuation, lower-case."""
    return token.strip().strip(_DECORATION).lower()


def first_token_verdict(text: str | None, labels: tuple[str, str, str]) -> Verdict:
    """The verdict of a continuation: its first word must be the first label, the second, or the tie word.

    Only the first word counts (what follows is the model continuing the text, often naming the other label).
    """
    words = (text or "").split(maxsplit=1)
    if not words:
        return "invalid"
    first = bare_token(words[0])
    for label, verdict in zip(labels, _VERDICTS, strict=True):
        if first == label.lower():
            return verdict
    return "invalid"


def first_token_probs(top: Mapping[str, float] | None, labels: tuple[str, str, str]) -> dict[str, float] | None:
    """Each label's probability at the first generated token, every spelling of it summed (" A", "A", " a").

    `top` is the first token's top log-probabilities (token -> log-probability); None when no label is among them.
    """
    if not top:
        return None
    wanted = {label.lower(): label for label in labels}
    probs: dict[str, float] = {}
    for token, logprob in top.items():
        label = wanted.get(bare_token(str(token)))
        chance = probability_of(logprob)
        if label is not None and chance is not None:
            probs[label] = probs.get(label, 0.0) + chance
    return probs or None


def probability_of(logprob: object) -> float | None:
    """The probability of a server's log-probability, or None for one that is not a finite number <= 0 (a NaN,
    an infinity or text would otherwise reach the verdicts as a probability that is not one)."""
    try:
        value = float(logprob)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return math.exp(value) if math.isfinite(value) and value <= 0 else None
