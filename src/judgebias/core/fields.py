"""Your data as it is: the names your file gives the fields an item is read from, and the words it uses for the
human labels, mapped to judgebias's (data.fields.<role>=<your field>, data.labels.<your value>=a|b|tie). Pure logic.

A file that lacks the fields on every line is answered once, with the fields it has, the ones it needs, and the
overrides that would read it, guessed from the usual names (conv_id for id, response_v1 for a, ...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ROLES = (
    "id", "question", "a", "b", "human", "human_votes", "human_voters", "model_a", "model_b", "context", "messages",
)  # fmt: skip
REQUIRED = ("id", "question", "a", "b")
OPTIONAL_ROLES = frozenset({"human", "human_votes", "human_voters", "model_a", "model_b", "context"})
LIST_ROLES = frozenset({"human_votes", "human_voters"})
LABEL_WORDS = frozenset({"a", "b", "tie", "1", "2"})
OPEN_MAPS = ("data.fields.", "data.labels.")  # maps whose keys are the user's own words (given without a plus)

# Names other datasets give the fields judgebias reads: suggested when a file has none of the fields.
ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("question_id", "conv_id", "conversation_id", "pair_id", "uid", "idx", "_id", "example_id", "row_id"),
    "question": ("prompt", "instruction", "input", "query", "turns", "user_prompt", "request"),
    "a": ("response_a", "answer_a", "output_a", "output_1", "completion_a", "ans1", "answer1", "response_1",
          "response_v1", "response1", "model_a_response", "chosen"),
    "b": ("response_b", "answer_b", "output_b", "output_2", "completion_b", "ans2", "answer2", "response_2",
          "response_v2", "response2", "model_b_response", "rejected"),
    "human": ("human_pref", "preference", "winner", "label", "human_label", "gold", "choice"),
}  # fmt: skip


@dataclass(frozen=True)
class FieldMap:
    """The file's names for the roles (role -> its field), its label words (its word -> a, b or tie), and whether an
    empty cell means "none" (a CSV writes every missing value as an empty cell)."""

    fields: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    empty_is_none: bool = False

    @property
    def identity(self) -> bool:
        """Nothing to map: the record is read as it is (the usual JSONL file, a million lines)."""
        return not self.fields and not self.labels and not self.empty_is_none

    def mapped(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record with judgebias's names and label words (a new dict; the record itself is left as it is)."""
        if self.identity:
            return record
        out = dict(record)
        # Every role read at once: a mapping may swap two names (data.fields.a=b data.fields.b=a).
        taken = {role: record[name] for role, name in self.fields.items() if name in record}
        for name in self.fields.values():
            out.pop(name, None)
        out.update(taken)
        if self.empty_is_none:
            for role in OPTIONAL_ROLES:
                if out.get(role) == "":
                    out[role] = None
            for role in LIST_ROLES:
                if isinstance(out.get(role), str):
                    out[role] = listed(out[role])
        if self.labels:
            if out.get("human") is not None:
                out["human"] = self.labels.get(_word(out["human"]), out["human"])
            if isinstance(out.get("human_votes"), list):
                out["human_votes"] = [self.labels.get(_word(vote), vote) for vote in out["human_votes"]]
        return out

    def label_hint(self, value: object) -> str:
        """How to map a label word judgebias does not know (`data.labels.<word>=a|b|tie`)."""
        word = _word(value)
        if not word or word.lower() in LABEL_WORDS or not re.fullmatch(r"[\w.\-]+", word):
            return ""
        return f"; if {word!r} means one of them, map it: data.labels.{word}=a (or b, or tie)"


def mapping_problem(fields: Mapping[str, str], labels: Mapping[str, str]) -> str | None:
    """What is wrong with data.fields / data.labels as given, in one line (None: nothing)."""
    for role, name in fields.items():
        if role not in ROLES:
            return (
                f"data.fields.{role}={name}: {role!r} is not a field judgebias reads: map one of "
                f"{', '.join(ROLES)} (data.fields.<role>=<your field>; other fields are kept as they are)"
            )
        if not isinstance(name, str) or not name.strip():
            return f"data.fields.{role}: give the name of your field that holds the item's {role}"
    taken: dict[str, str] = {}
    for role, name in fields.items():
        if name in taken:
            return f"data.fields.{taken[name]} and data.fields.{role} both read {name!r}: each role needs its own field"
        taken[name] = role
    for word, label in labels.items():
        if str(label).strip().lower() not in LABEL_WORDS:
            return f"data.labels.{word}={label}: a label word maps to a, b or tie (e.g. data.labels.{word}=a)"
    return None


def as_typed(override: str) -> str:
    """An override as the user typed it: without the `++` the command line adds to a key of an open map (what runs
    and sweeps show)."""
    return override[2:] if override.startswith(tuple(f"++{key}" for key in OPEN_MAPS)) else override


def _word(value: object) -> str:
    """A label value as the key a mapping names it by (3 and "3" alike)."""
    return value if isinstance(value, str) else json.dumps(value)


def listed(text: str) -> list[Any]:
    """A list written in one cell: a JSON array, or values separated by commas (empty: none)."""
    text = text.strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            return [text]
        return value if isinstance(value, list) else [value]
    return [part.strip() for part in text.split(",")]


def missing_everywhere(source: str, read: str, names: Sequence[str], missing: Sequence[str], fields: FieldMap) -> str:
    """The one line for a file whose every line read (`read`: "the 20 lines read") lacks the same required fields:
    what it has, what it needs, and the overrides that would read it."""
    guesses = guessed_fields(names, missing)
    suggestion = " ".join(f"data.fields.{role}={name}" for role, name in guesses.items())
    mapped = ", ".join(f"{role} from {name!r}" for role, name in fields.fields.items())
    return (
        f"{source}: none of {read} has the field{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
        f"(they have {', '.join(map(repr, names)) or 'no fields'}"
        + (f"; mapped: {mapped}" if mapped else "")
        + "): an item needs id, question, a and b; "
        + (
            f"map your names to them, e.g. {suggestion}"
            if guesses
            else "map your names to them with data.fields.<role>=<your field>, e.g. data.fields.a=my_answer_1"
        )
        + " (docs/data.md#your-field-names)"
    )


def guessed_fields(names: Sequence[str], missing: Sequence[str]) -> dict[str, str]:
    """For each missing role, a field of the file that likely holds it (known aliases first, then name patterns)."""
    guesses: dict[str, str] = {}
    taken: set[str] = set()
    for role in [*missing, "human"]:
        if role in names:
            continue
        candidate = next((name for name in ALIASES.get(role, ()) if name in names and name not in taken), None)
        if candidate is None:
            candidate = _by_pattern(role, names, taken)
        if candidate is not None:
            guesses[role] = candidate
            taken.add(candidate)
    return {role: name for role, name in guesses.items() if role in missing or role == "human"}


def _by_pattern(role: str, names: Sequence[str], taken: set[str]) -> str | None:
    """A field whose name says it holds `role`: an id-like name, a prompt-like name, the first or second of a pair."""
    free = [name for name in names if name not in taken]
    lowered = {name: name.lower() for name in free}
    if role == "id":
        return next((n for n in free if lowered[n] == "id" or lowered[n].endswith(("_id", "id"))), None)
    if role == "question":
        return next((n for n in free if any(w in lowered[n] for w in ("prompt", "question", "instruction"))), None)
    if role in ("a", "b"):
        ends = ("1", "_a", "v1", "_first") if role == "a" else ("2", "_b", "v2", "_second")
        return next((n for n in free if lowered[n].endswith(ends) and "model" not in lowered[n]), None)
    if role == "human":
        return next((n for n in free if any(w in lowered[n] for w in ("pref", "winner", "label", "human"))), None)
    return None
