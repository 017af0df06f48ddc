"""What a run prints: the one-screen summary at its end, and a dry run's account. Text only: the files are
engine/outputs.py's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judgebias.core.redaction import Redactor
from judgebias.core.summary import Agreement, Calibration, DryRunEstimate, Summary
from judgebias.core.terminal import escape_controls
from judgebias.figures.catalogue import Figure, shown_in
from judgebias.figures.formatting import ci_text, counted, p_text, pct
from judgebias.figures.headline import models_text


def format_dry_run(estimate: DryRunEstimate) -> str:
    """The dry run's one-screen account."""
    return (
        f"dry run: {estimate['judge']} / {estimate['rubric']} / {estimate['data']}: {estimate['n_items']} items, "
        f"{estimate['calls_total']} calls: {estimate['calls_live']} would go live, {estimate['calls_cached']} cached, "
        f"{estimate['calls_offline']} answered offline; "
        f"about {estimate['prompt_tokens_est']} prompt tokens, about ${estimate['cost_usd_est']:.4f} live or "
        f"${estimate['cost_usd_est_batch']:.4f} as a batch (judge.mode=batch)"
        + _shared_text(estimate)
        + ". Nothing was called."
    )


def _shared_text(estimate: DryRunEstimate) -> str:
    """What a server's prompt cache could take off: the prompt tokens each call shares with the one before it."""
    shared, total = estimate.get("prompt_tokens_shared_est", 0), estimate["prompt_tokens_est"]
    if not shared or not total:
        return ""
    return (
        f"; {shared} of the prompt tokens ({100 * shared / total:.0f}%) repeat the call before, which a server's "
        f"prompt cache can serve: about ${estimate.get('cost_usd_est_cached', 0.0):.4f} live if it does "
        "(the cap never counts on it)"
    )


def repetition_lines(s: Summary) -> list[str]:
    """judge.samples > 1: how often each order's samples agree, and the figures of each order's majority."""
    if (s.get("samples") or 1) <= 1:
        return []
    stable = (
        f"order 1 {pct(s.get('repetition_stability_order1'))}, order 2 {pct(s.get('repetition_stability_order2'))} "
        f"of samples give their order's most frequent reply (on {s.get('repetition_stability_n')} items)"
    )
    if s.get("repetition_stability_note"):
        stable = f"n/a ({s['repetition_stability_note']})"
    return [
        f"  samples: {s['samples']} per order   stability: {stable}",
        f"  majority of samples: win_rate {pct(s.get('majority_win_rate'))}   position_consistency "
        f"{pct(s.get('majority_position_consistency'))} (on {s.get('majority_n')} items)",
    ]


def side_a(summary: Summary) -> str:
    """How the figures' side `a` is called: "a", or "a (bot-v1)" when the headline names its model."""
    said = summary.get("headline") or {}
    name = said.get("name") if said.get("side") == "a" else said.get("other")
    return "a" if not name or name in ("a", "a (a)") else f"a ({name})"


def interval_header(summary: Summary) -> str:
    """What the bracketed intervals are: a 95% bootstrap over items, or over clusters of one item field."""
    resamples = summary.get("bootstrap_resamples", 0)
    if not resamples:
        return "  intervals: none (bootstrap.resamples=0)"
    cluster = summary.get("bootstrap_cluster")
    unit = "items" if cluster is None else f"{summary.get('bootstrap_clusters')} clusters by {cluster}"
    return f"  [intervals: 95% bootstrap over {unit}, {counted(resamples, 'resample')}]"


def changed_settings(summary: Summary, overrides: Sequence[str]) -> list[str]:
    """The command line's overrides that make this run differ from the defaults, without the judge, rubric and
    data choices the header already names and without Hydra's own settings (run folders, launchers)."""
    named = {f"{group}={summary.get(group)}" for group in ("judge", "rubric", "data")}
    redact = Redactor()
    return [redact(o) for o in overrides if o not in named and not o.lstrip("+~").startswith(("hydra.", "hydra/"))]


def format_summary(summary: Summary, overrides: Sequence[str] = ()) -> str:
    """The clean one-screen summary printed at the end of a run; its header names the run's `overrides`."""
    s = summary
    intervals = s.get("ci") or {}
    degenerate = s.get("ci_degenerate") or {}
    changed = changed_settings(s, overrides)
    # What makes the figures below doubtful comes first, before any figure or advice.
    warnings = [
        f"  {title}: {s[key]}"  # type: ignore[literal-required]
        for title, key in (("UNREADABLE", "unreadable_note"), ("MIXED JUDGE", "mixed_judge_note"))
        if s.get(key)
    ]
    lines = [
        f"judgebias  judge={s['judge']}  rubric={s['rubric']}  data={s['data']}  status={s['status']}"
        + (f"  overrides: {' '.join(changed)}" if changed else ""),
        *warnings,
        *([f"  {s['headline']['text']}"] if models_text(s) else []),  # when it names the models
        f"  items: {s['n_items']}   wins/ties/losses of {side_a(s)}: {s['wins']}/{s['ties']}/{s['losses']}",
        interval_header(s),
        f"  win_rate: {pct(s['win_rate'])}{ci_text(intervals.get('win_rate'), why=degenerate.get('win_rate'))}   "
        f"consistent-only: {pct(s.get('win_rate_consistent'))}   pooled: {pct(s.get('win_rate_pooled'))}",
        f"  position_consistency: {pct(s['position_consistency'])}{ci_text(intervals.get('position_consistency'), why=degenerate.get('position_consistency'))}   "
        f"biased_first: {pct(s['biased_first'])}   biased_second: {pct(s['biased_second'])}",
    ]
    lines += _figure_lines(s, intervals, degenerate)
    lines += _call_lines(s)
    lines += _provenance_lines(s)
    return escape_controls("\n".join(lines))  # model names and notes of a server's choosing: shown, never acted on


def _figure_lines(s: Summary, intervals: Mapping[str, Any], degenerate: Mapping[str, str]) -> list[str]:
    """Position preference, length, style, agreement with people, calibration and soft verdicts."""
    lines: list[str] = []
    if s.get("first_position_p") is not None:
        score = "n/a" if s.get("preference_score") is None else f"{s['preference_score']:+.2f}"
        lines.append(
            f"  position preference: score {score} (negative = first slot), "
            f"sign test {p_text(s['first_position_p'])} on {s.get('first_position_n')} position-following items"
        )
    if s.get("length_controlled_win_rate") is not None or s.get("longer_wins") is not None:
        lines.append(
            f"  length: longer answer wins {pct(s.get('longer_wins'))} of decisive verdicts; "
            "length-controlled win_rate "
            + controlled_text(
                s.get("length_controlled_win_rate"),
                intervals.get("length_controlled_win_rate"),
                s.get("length_controlled_identifiable"),
                degenerate.get("length_controlled_win_rate"),
            )
        )
    if s.get("styled_wins") is not None:
        lines.append(
            f"  style: more formatted answer wins {pct(s['styled_wins'])}{ci_text(intervals.get('styled_wins'), why=degenerate.get('styled_wins'))} "
            f"of {s.get('styled_wins_n')} decisive verdicts; style-controlled win_rate "
            + controlled_text(
                s.get("style_controlled_win_rate"),
                intervals.get("style_controlled_win_rate"),
                s.get("style_controlled_identifiable"),
                degenerate.get("style_controlled_win_rate"),
            )
        )
    lines.extend(unidentified_lines(s))
    lines.extend(repetition_lines(s))
    if "human_agreement" in s:
        lines.append(
            f"  human_agreement: {pct(s['human_agreement'])}{ci_text(intervals.get('human_agreement'), why=degenerate.get('human_agreement'))} on {s['human_agreement_n']} "
            f"decisive labels; {counted(s.get('human_agreement_ties_left_out', 0), 'tie')} left out   "
            f"decisive-only: {pct(s.get('human_agreement_decisive'))}   kappa: "
            + ("n/a" if s.get("cohen_kappa") is None else f"{s['cohen_kappa']:.2f}")
        )
        if s.get("cohen_kappa_note"):
            lines.append(f"    {s['cohen_kappa_note']}")
        if s.get("human_human_agreement") is not None:
            lines.append(
                f"  vs a random human vote: {pct(s.get('human_vote_agreement'))} "
                f"(human-human ceiling {pct(s['human_human_agreement'])})"
            )
    if s.get("calibration"):
        lines.extend(calibration_lines(s["calibration"]))
    lines += [line for entry in shown_in("console") if (line := figure_line(s, entry, intervals, degenerate))]
    return lines


def figure_line(s: Summary, entry: Figure, intervals: Mapping[str, Any], degenerate: Mapping[str, str]) -> str | None:
    """A catalogue figure's own line: its label, value and interval, and its note (what it rests on); None when the
    run does not have it (an optional figure it did not measure)."""
    fields: Mapping[str, Any] = s  # read by the names the catalogue gives
    if entry.name not in fields or (entry.optional and fields.get(entry.name) is None):
        return None
    value = fields.get(entry.name)
    shown = pct(value) if entry.kind == "rate" else "n/a" if value is None else f"{value:.3f}"
    note = fields.get(entry.note_key)
    return f"  {entry.label}: {shown}{ci_text(intervals.get(entry.name), why=degenerate.get(entry.name))}" + (
        f" ({note})" if note else ""
    )


def _call_lines(s: Summary) -> list[str]:
    """What was called and answered, and what it cost."""
    lines: list[str] = []
    offline = s.get("calls_offline", 0)
    answered = f"calls_offline: {offline}" if offline else f"calls_live: {s['calls_live']}"
    lines.append(
        f"  calls_total: {s['calls_total']}   {answered}   calls_cached: {s['calls_cached']}   "
        f"invalid replies: {s['n_invalid']}   failed calls: {s['failed_calls']}"
        + (f"   no verdict: {s['n_no_verdict']}" if s.get("n_no_verdict") else "")
        + (f"   calls_batched: {s['calls_batched']}" if s.get("calls_batched") else "")
    )
    if offline and offline == s["calls_total"]:
        lines.append("  tokens: none (an offline judge sends no request)   cost_usd: 0.0000")
    else:
        cached = s.get("prompt_tokens_cached") or 0
        lines.append(
            f"  tokens: {s['prompt_tokens']} in"
            + (f" ({cached} from the server's prompt cache)" if cached else "")
            + f" / {s['completion_tokens']} out   cost_usd: {s['cost_usd']:.4f}   saved_usd: {s['saved_usd']:.4f}"
            + (f"   prompt cache saved: {s.get('prompt_cache_saved_usd') or 0:.4f}" if cached else "")
        )
    return lines


def _provenance_lines(s: Summary) -> list[str]:
    """Each judge of an ensemble, the notes, who answered when it was not the judge named, imported replies and the
    rubric's warning: what a reader must know about where the figures come from."""
    lines: list[str] = []
    for judge, figures in (s.get("judges") or {}).items():
        lines.append(
            f"  - {judge}: win_rate {pct(figures['win_rate'])}  consistency {pct(figures['position_consistency'])}  "
            f"first {pct(figures['biased_first'])}  second {pct(figures['biased_second'])}"
        )
    for note in s.get("notes", []):
        if note != s.get("unreadable_note"):  # said under the first line already
            lines.append(f"  note: {note}")
    if s.get("answered_unexpected"):
        names = ", ".join(s["answered_unexpected"])
        lines.append(
            f"  answered by {names}: neither judge.model nor judge.expect_models (a gateway's deployment behind judge "
            f"{s.get('judge')!r}?); if that is the judge you meant, name it in judge.expect_models"
        )
    routed = s.get("routed_elsewhere")
    per_judge: dict[str, Any] = {} if not routed else {"": routed} if "model" in routed else dict(routed)
    for routed_judge, where in per_judge.items():
        lines.append(
            f"  routed elsewhere{f' ({routed_judge})' if routed_judge else ''}: the gateway serves {where['model']!r} "
            f"({', '.join(where['gateway_deployments'])}), but {', '.join(where['answered_by'])} answered: an alias or a "
            "route took the calls elsewhere (the gate fails this run unless judge.expect_models names who answered)"
        )
    if s.get("soft_note"):  # log-probabilities asked for and dropped (a gateway's drop_params): said, not only kept
        lines.append(f"  note: {s['soft_note']}")
    imported = s.get("imported_replies")
    if imported:
        bundles = ", ".join(f"{b['file']} (sha256 {b['sha256'][:12]})" for b in imported["bundles"])
        lines.append(
            f"  IMPORTED: {imported['replies']} replies came from files handed in (bundles, batch output files), "
            f"not from a judge: {bundles}"
        )
    if s.get("agreement_warning"):
        lines.append(f"  WARNING: {s.get('agreement_message')}")
    elif s.get("agreement_message"):
        lines.append(f"  note: {s.get('agreement_message')}")
    return lines


def controlled_text(value: float | None, interval: Any, identifiable: bool | None, why: str | None = None) -> str:
    """A controlled win rate with its interval, 'not identifiable' (the reason follows on its own line), or n/a."""
    if value is not None:
        return pct(value) + ci_text(interval, why=why)
    return "not identifiable (why: below)" if identifiable is False else "n/a"


def unidentified_lines(s: Summary) -> list[str]:
    """One line per controlled win rate the data cannot identify, with the reason."""
    lines = []
    if s.get("length_controlled_identifiable") is False and s.get("length_controlled_note"):
        lines.append(f"    length-controlled not identifiable: {s['length_controlled_note']}")
    if s.get("style_controlled_identifiable") is False and s.get("style_controlled_note"):
        lines.append(f"    style-controlled not identifiable: {s['style_controlled_note']}")
    return lines


_SHOWN_ANNOTATORS = 5  # more annotators than this: the per-annotator lines are in summary.json only


def calibration_lines(c: Calibration) -> list[str]:
    """The human ceiling and the judge against the majority and each annotator, ties stated every time."""
    ceiling, chance = c["ceiling"], "kappa" if c["ceiling"]["method"] == "cohen_kappa" else "alpha"
    people = len(c["annotators"]) or "anonymous"
    lines = [
        f"  human ceiling ({people} annotators, {c['labels_n']} labels): people agree "
        f"{pct(ceiling['agreement'])}{ci_text(ceiling['agreement_ci'])} on {ceiling['agreement_n']} items labelled "
        f"twice or more; {agreement_text(ceiling)}   {chance}: {kappa_text(ceiling)}",
        f"  judge vs majority: {pct(c['majority']['agreement'])}{ci_text(c['majority']['agreement_ci'])} on "
        f"{c['majority']['agreement_n']} labels with ties; {agreement_text(c['majority'])}   "
        f"kappa: {kappa_text(c['majority'])}   ({c['majority']['split_left_out']} split items left out)",
    ]
    if len(c["per_annotator"]) <= _SHOWN_ANNOTATORS:
        lines.extend(
            f"  judge vs {a['annotator']}: {pct(a['agreement'])}{ci_text(a['agreement_ci'])} on {a['agreement_n']} "
            f"labels with ties; {agreement_text(a)}   kappa: {kappa_text(a)}"
            for a in c["per_annotator"]
        )
    return lines


def agreement_text(figures: Agreement) -> str:
    """'80.0% [62.5, 93.8] on 16 decisive labels; 4 ties left out'."""
    return (
        f"{pct(figures['decisive_agreement'])}{ci_text(figures['decisive_agreement_ci'])} on "
        f"{figures['decisive_agreement_n']} decisive labels; {counted(figures['ties_left_out'], 'tie')} left out"
    )


def kappa_text(figures: Agreement) -> str:
    """'0.62 [0.41, 0.80]', or 'n/a'."""
    value, interval = figures["kappa"], figures["kappa_ci"]
    if value is None:
        return "n/a"
    return f"{value:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")
