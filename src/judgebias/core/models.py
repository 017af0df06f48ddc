"""What a model's name says about it, decided in one place: whether it is one of OpenAI's reasoning models (the
o-series and the gpt-5 family), which refuse sampling settings and return no log-probabilities. The config check
before a run and the provenance figures after it ask this one rule."""

from __future__ import annotations

import re

# A name (provider prefix allowed) whose model is o1, o3-mini, o4-mini, o1-pro, gpt-5, gpt-5-mini, gpt-5.1, ...:
# the family name ends where the name does or at a separator, so gpt-5o or o1pro are not taken for one.
REASONING_MODEL = re.compile(r"(?:^|/)(?:o\d+|gpt-5)(?:$|[-.:])")


def is_reasoning_model(name: str | None) -> bool:
    """Whether `name` names one of OpenAI's reasoning models."""
    return bool(REASONING_MODEL.search((name or "").lower()))
