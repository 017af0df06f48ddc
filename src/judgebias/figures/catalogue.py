"""Every figure a run reports, declared once: its summary.json name, how it reads, whether it has an interval, which
way is better for a judge, whether a paired test applies, and where it is shown. The summary's interval order, the
printed summary's extra lines, the report's cards, the sweep table and report, compare, the gate's thresholds and
tolerances and the audit iterate this table: adding a figure is its computation (figures.metrics) and one entry.

Pure data: no I/O, nothing computed here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

Kind = Literal["rate", "score", "kappa", "count", "p"]  # a share (shown in percent), a signed score, a kappa, ...
Better = Literal["higher", "lower", "neither"]  # which way is better for a judge (neither: a fact of the answers)
Place = Literal["card", "console", "sweep", "compare", "audit"]


@dataclass(frozen=True)
class Sweep:
    """How a figure shows in the sweep table: its column's place among the figures' (sweep_summary.csv's columns
    keep their order), its headings (full, and short when the table must fit a terminal), whether its interval shows
    beside it, and how soon it is left out to fit a terminal (lower: sooner; None: never)."""

    order: int
    heading: str
    short: str
    interval: bool = True
    leave_out: int | None = None
    optional: bool = False  # a column only when some job has the figure (the people's win rate: labelled data)


@dataclass(frozen=True)
class Gate:
    """The gate's options for a figure: `--min-STEM` / `--max-STEM` thresholds (min when higher is better, max when
    lower, both when neither), and with --baseline a default tolerance of a change on its worse side."""

    stem: str  # e.g. "consistency": --min-consistency
    alias: str | None = None  # the short name --max-drop / --max-rise take (consistency=0.02)
    tolerance: float | None = None  # the default tolerance with --baseline (None: only when given)
    help: str = ""


@dataclass(frozen=True)
class Figure:
    """One figure: what a reader needs to read it, and where it is shown."""

    name: str  # the summary.json key (and the `ci` key of its interval)
    label: str  # words for a reader ("position consistency")
    kind: Kind = "rate"
    interval: bool = True  # has a bootstrap interval in summary.json's `ci`
    better: Better = "neither"
    paired_test: bool = False  # compare gives an exact paired test (each item a value in both runs)
    places: frozenset[Place] = frozenset()
    hint: str = ""  # a card's line under the value; {name} placeholders read the summary
    count: str | None = None  # the summary key counting what the figure is computed on
    positional: bool = False  # needs both orders (withheld where the order shown is not known)
    missing: str = "the run did not report it"  # why a run may not have it
    sweep: Sweep | None = None
    gate: Gate | None = None
    derived: bool = False  # not a summary.json key: a comparison computes it from the counts (invalid_rate)
    optional: bool = False  # shown (a card, a line) only when the run measured it, not as "n/a"
    always: bool = False  # shown even where a summary lacks it (an older run's report: a dash)
    computed: bool = False  # its interval comes with it (not the bootstrap's): a prediction-powered one
    fitted: str | None = None  # a fit's figure: the key prefix of its `*_identifiable` and `*_note`
    note: str | None = None  # the summary key saying why the figure is missing (None: `<name>_note`)

    def shown(self, place: Place) -> bool:
        """Whether the figure is shown there."""
        return place in self.places

    @property
    def note_key(self) -> str:
        """Where a summary says why this figure is missing."""
        if self.note is not None:
            return self.note
        return f"{self.fitted}_note" if self.fitted else f"{self.name}_note"

    @property
    def identifiable_key(self) -> str | None:
        """Where a summary says whether a fit could identify this figure (None: not a fit)."""
        return None if self.fitted is None else f"{self.fitted}_identifiable"


def _places(*places: Place) -> frozenset[Place]:
    return frozenset(places)


NO_LABELS = "the data has no human labels"
ONE_ORDER = "only one order was recorded"

# In the order of the summary's `ci` entries, and of every display that lists figures.
FIGURES: tuple[Figure, ...] = (
    Figure("n_items", "items", kind="count", interval=False, places=_places("audit")),
    Figure(
        "win_rate",
        "win rate of a",
        paired_test=True,
        places=_places("card", "sweep", "compare", "audit"),
        always=True,
        hint="a win counts 1, a tie ½",
        sweep=Sweep(0, "win rate % [95% CI]", "win % [CI]"),
        gate=Gate("win-rate", help="win_rate of answer a"),
    ),
    Figure("decisive_win_rate", "decisive win rate of a", places=_places("compare")),
    Figure(
        "position_consistency",
        "position consistency",
        better="higher",
        paired_test=True,
        places=_places("card", "sweep", "compare", "audit"),
        always=True,
        hint="both orders give the same verdict",
        positional=True,
        missing=ONE_ORDER,
        sweep=Sweep(1, "consistency % [CI]", "consist. % [CI]"),
        gate=Gate("consistency", "consistency", 0.02, "position_consistency"),
    ),
    Figure("flip_rate", "flip rate", better="lower", positional=True, missing=ONE_ORDER),
    Figure("residual_flip_rate", "residual flip rate", better="lower", positional=True, missing=ONE_ORDER),
    Figure(
        "biased_first",
        "biased to first",
        better="lower",
        paired_test=True,
        places=_places("card", "sweep", "compare", "audit"),
        always=True,
        hint="picked whichever was shown first",
        positional=True,
        missing=ONE_ORDER,
        sweep=Sweep(2, "biased 1st %", "1st %", interval=False, leave_out=6),
        gate=Gate("biased-first", "biased_first", 0.02, "biased_first (first-position bias)"),
    ),
    Figure(
        "biased_second",
        "biased to second",
        better="lower",
        paired_test=True,
        places=_places("card", "sweep", "compare", "audit"),
        always=True,
        hint="picked whichever was shown second",
        positional=True,
        missing=ONE_ORDER,
        sweep=Sweep(3, "biased 2nd %", "2nd %", interval=False, leave_out=5),
        gate=Gate("biased-second", "biased_second", 0.02, "biased_second (second-position bias)"),
    ),
    Figure(
        "first_position_p",
        "first-position sign test p",
        kind="p",
        interval=False,
        places=_places("audit"),
        positional=True,
        missing=ONE_ORDER,
    ),
    Figure(
        "preference_score",
        "preference score",
        kind="score",
        paired_test=True,
        places=_places("compare"),
        positional=True,
        missing=ONE_ORDER,
    ),
    Figure("win_rate_consistent", "win rate, consistent items only"),
    Figure("win_rate_pooled", "win rate pooled over single calls"),
    Figure("n_invalid", "invalid replies", kind="count", interval=False, places=_places("audit")),
    Figure(
        "longer_wins",
        "longer answer wins",
        places=_places("card", "audit"),
        hint="of {longer_wins_n} decisive verdicts",
        count="longer_wins_n",
        optional=True,
        note="length_note",
    ),
    Figure("length_verdict_corr", "length-verdict correlation", kind="score"),
    Figure(
        "length_controlled_win_rate",
        "length-controlled win rate",
        places=_places("card", "compare", "audit"),
        hint="win rate of a at equal lengths",
        optional=True,
        fitted="length_controlled",
    ),
    Figure(
        "styled_wins",
        "more formatted answer wins",
        places=_places("card", "sweep", "audit"),
        hint="of {styled_wins_n} decisive verdicts",
        count="styled_wins_n",
        missing="no decisive verdict between answers that differ in formatting",
        optional=True,
        note="style_note",
        sweep=Sweep(5, "styled wins % [CI]", "styled % [CI]", leave_out=2),
        gate=Gate(
            "styled-wins",
            help="styled_wins: share of decisive verdicts won by the more formatted answer (0.5 = no style bias)",
        ),
    ),
    Figure(
        "style_controlled_win_rate",
        "style-controlled win rate",
        places=_places("card", "compare", "audit"),
        hint="win rate of a at equal formatting and length",
        optional=True,
        fitted="style_controlled",
    ),
    Figure("soft_win_rate", "soft_win_rate", places=_places("console"), optional=True),
    Figure(
        "human_agreement",
        "agreement with people",
        better="higher",
        paired_test=True,
        places=_places("card", "sweep", "compare", "audit"),
        hint="on {human_agreement_n} decisive labels; {human_agreement_ties_left_out|tie} left out",
        count="human_agreement_n",
        missing=NO_LABELS,
        optional=True,
        sweep=Sweep(4, "human agr. % [CI]", "human % [CI]", leave_out=9),
        gate=Gate("agreement", "agreement", 0.02, "human_agreement (needs human labels)"),
    ),
    Figure(
        "human_agreement_decisive",
        "agreement with people, both decisive",
        better="higher",
        places=_places("compare"),
        missing=NO_LABELS,
    ),
    Figure(
        "cohen_kappa",
        "Cohen's kappa with people",
        kind="kappa",
        better="higher",
        places=_places("compare", "audit"),
        missing=NO_LABELS,
        gate=Gate("kappa", "kappa", 0.05, "Cohen's kappa with the human labels"),
    ),
    Figure(
        "corrected_win_rate",
        "people's win rate of a",
        computed=True,
        places=_places("console", "card", "sweep", "compare"),
        hint="the judge's win rate corrected by people's labels (PPI++)",
        missing=NO_LABELS,
        sweep=Sweep(6, "people's win % [CI]", "people % [CI]", leave_out=3, optional=True),
        gate=Gate("corrected-win-rate", help="corrected_win_rate: the win rate of a as people would give it"),
    ),
    Figure(
        "corrected_decisive_win_rate",
        "people's decisive win rate of a",
        computed=True,
        places=_places("console", "card", "compare"),
        hint="among decisive labels, corrected by the judge's decisive verdicts (PPI++)",
        missing=NO_LABELS,
    ),
    Figure(
        "corrected_length_controlled_win_rate",
        "people's length-controlled win rate",
        computed=True,
        places=_places("card"),
        hint="win rate of a at equal lengths as people would give it (a tie half a win)",
        missing=NO_LABELS,
    ),
    Figure("human_vote_agreement", "agreement with a random human vote", places=_places("audit"), missing=NO_LABELS),
    Figure("human_vote_agreement_no_ties", "agreement with a random decisive human vote", missing=NO_LABELS),
    Figure("human_human_agreement", "human-human agreement", missing=NO_LABELS),
    Figure("self_preference", "self-preference"),
    Figure("repetition_stability_order1", "repetition stability, order 1"),
    Figure("repetition_stability_order2", "repetition stability, order 2"),
    Figure("majority_win_rate", "win rate of the samples' majority"),
    Figure("majority_position_consistency", "position consistency of the samples' majority"),
    Figure("soft_win_rate_mean", "soft win rate over samples"),
    Figure(
        "invalid_rate",
        "unreadable replies per answered call",
        better="lower",
        places=_places("compare"),
        derived=True,
        gate=Gate("invalid-rate", "invalid", 0.02, "share of calls with an unreadable reply"),
    ),
    Figure(
        "human_agreement_n",
        "decisive human labels",
        kind="count",
        interval=False,
        better="higher",
        missing=NO_LABELS,
        gate=Gate("labels", help="decisive human labels behind human_agreement (a figure on 12 labels proves little)"),
    ),
)

BY_NAME: dict[str, Figure] = {figure.name: figure for figure in FIGURES}
WIN_RATE = BY_NAME["win_rate"]  # the headline figure, which displays name through this entry
CORRECTED_WIN_RATE = BY_NAME["corrected_win_rate"]  # the people's number beside it


def figure(name: str) -> Figure:
    """The catalogue's entry for `name` (KeyError: no such figure)."""
    return BY_NAME[name]


def shown_in(place: Place) -> tuple[Figure, ...]:
    """The figures shown in `place`, in catalogue order."""
    return tuple(f for f in FIGURES if f.shown(place))


def in_sweep() -> tuple[tuple[Figure, Sweep], ...]:
    """The figures of the sweep table, in the order of its columns."""
    found = [(f, f.sweep) for f in FIGURES if f.sweep is not None]
    return tuple(sorted(found, key=lambda pair: pair[1].order))


def with_intervals() -> tuple[str, ...]:
    """The figures with an interval, in the order of the summary's `ci`."""
    return tuple(f.name for f in FIGURES if f.interval and not f.derived)


def bootstrapped() -> tuple[str, ...]:
    """The figures whose interval the bootstrap draws, in the order of the summary's `ci`."""
    return tuple(f.name for f in FIGURES if f.interval and not f.derived and not f.computed)


def percent(name: str) -> bool:
    """Whether a figure reads as a percentage (a rate), not a number (a score, a kappa, a count)."""
    entry = BY_NAME.get(name)
    return entry is not None and entry.kind == "rate"


def gates() -> Iterator[tuple[str, Figure, bool]]:
    """Every threshold option of the gate: (option name with underscores, figure, is a minimum)."""
    for entry in FIGURES:
        if entry.gate is None:
            continue
        if entry.better in ("higher", "neither"):
            yield f"min_{entry.gate.stem.replace('-', '_')}", entry, True
        if entry.better in ("lower", "neither"):
            yield f"max_{entry.gate.stem.replace('-', '_')}", entry, False
