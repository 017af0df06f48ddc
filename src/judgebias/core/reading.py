"""A reply read in the view it answered: its positional verdict, each distinct reply parsed once per process.

Short replies (a label rubric's few strings) and replies cut off at max_tokens are remembered: the live backend
reads a cut-off reply to decide whether to retry it, and the runner reads the same reply again for its verdict.
"""

from __future__ import annotations

import functools
from typing import Protocol

from judgebias.core.completion import first_token_verdict
from judgebias.core.parsing import Verdict, parse_reply
from judgebias.core.prompt import Shown
from judgebias.core.record import Reply

SHORT_REPLY = 64  # replies up to this length are parsed once and remembered


class ReplyFormat(Protocol):
    """What reading a reply needs of a rubric (config.schema.RubricConfig has it): how it is parsed, and the word
    for a tie. A protocol, so the rules below the config layer do not import it."""

    @property
    def parser(self) -> str: ...

    @property
    def tie_label(self) -> str: ...


def read_reply(reply: Reply, view: Shown, rubric: ReplyFormat, *, first_token: bool = False) -> Verdict:
    """The positional verdict of `reply`: "A" (first shown), "B" (second shown), "tie" or "invalid".

    `first_token`: the reply continues a completion prompt's answer cue, so only its first word is the verdict.
    """
    if first_token:
        return first_token_verdict(reply.text, view.labels(rubric.tie_label))
    labels = (view.label_first, view.label_second)
    text = reply.text
    if text is not None and (len(text) <= SHORT_REPLY or reply.finish_reason == "length"):
        return _parse_remembered(text, str(rubric.parser), labels, rubric.tie_label)
    return parse_reply(text, style=rubric.parser, labels=labels, tie_label=rubric.tie_label)


@functools.lru_cache(maxsize=4096)
def _parse_remembered(text: str, style: str, labels: tuple[str, str], tie_label: str) -> Verdict:
    return parse_reply(text, style=style, labels=labels, tie_label=tie_label)
