"""`python -m judgebias.review`: sample a run for people to label, then merge their labels into the data.

    python -m judgebias.review sample RUN --n 100 [--strategy random|stratified|uncertain] [--seed 0] [--out DIR]
    python -m judgebias.review sample RUN --n auto --width 0.05 [--strategy ...]   (as many as that width needs)
    python -m judgebias.review merge LABELS... --into DATA_OR_RUN [--out FILE]
    python -m judgebias.review plan RUN --width 0.05    (how many labels the people's win rate needs for that width)

Exit codes: 0 done, 2 a mistake in the input (one line, `judgebias: error: ...`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgebias.core.errors import UserError
from judgebias.core.sampling import Judged, Strategy
from judgebias.core.verdict import WIN_SCORE
from judgebias.figures.catalogue import WIN_RATE
from judgebias.figures.corrected import SCORE
from judgebias.io.dataset import JSONL, Reading
from judgebias.io.run_dir import RunDir
from judgebias.process import startup
from judgebias.process.command import CommandParser, exit_as_command, prog, run_command, say
from judgebias.review.labels import Samples, merge_labels
from judgebias.review.page import write_labelling
from judgebias.review.plan import Errors, check_width, errors_of, labels_needed, plan_text
from judgebias.review.sample import SAMPLE_INFO, JudgedRun, judged, read_run, write_sample


def _count(text: str) -> int | str:
    if text == "auto":
        return text
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a number of items (1 or more, or auto with --width)")
    return value


def _width(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not an interval width between 0 and 1 (0.05 = 5 points)")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in (0, 1] (e.g. 0.1 for 10%)")
    return value


def parser() -> argparse.ArgumentParser:
    """The command line of the review loop."""
    p = CommandParser(prog=prog("review"), description=__doc__.split("\n\n")[0])
    commands = p.add_subparsers(dest="command", required=True)
    sample = commands.add_parser("sample", help="draw items of a run for people to label; write the labelling page")
    sample.add_argument("run", type=Path, help="a run folder, or one job folder of a sweep")
    size = sample.add_mutually_exclusive_group()
    size.add_argument(
        "--n",
        type=_count,
        help="how many items (default: 20%% of the unlabelled items); auto: as many as --width needs",
    )
    size.add_argument("--fraction", type=_fraction, help="the share of unlabelled items to draw, e.g. 0.1")
    sample.add_argument("--strategy", choices=[s.value for s in Strategy], default=Strategy.random.value)
    sample.add_argument("--seed", type=int, default=0, help="the draw's seed (the same seed draws the same sample)")
    sample.add_argument("--out", type=Path, help="where to write the sample (default: RUN/review)")
    sample.add_argument(
        "--width", type=_width, help="with --n auto: the width the people's win rate interval should reach"
    )
    sample.add_argument(
        "--include-gold",
        action="store_true",
        help="also sample items whose only label is the dataset's `human` (to measure people against it)",
    )
    plan = commands.add_parser("plan", help="how many labels the people's win rate needs for an interval of --width")
    plan.add_argument("run", type=Path, help="a run folder (labelled items so far tell the judge's error)")
    plan.add_argument("--width", type=_width, default=0.05, help="the interval's width (default 0.05: 5 points)")
    merge = commands.add_parser("merge", help="write human_votes from label files into a copy of the dataset")
    merge.add_argument("labels", type=Path, nargs="+", help="label files: the page's .jsonl exports or filled .csv")
    merge.add_argument("--into", type=Path, required=True, help="the dataset JSONL, or a run folder (its dataset)")
    merge.add_argument("--out", type=Path, help="the labelled copy (default: a new ./DATASET.labelled[-N].jsonl)")
    merge.add_argument("--add", action="store_true", help="add the labels to the --out file that exists already")
    merge.add_argument(
        "--sample", type=Path, action="append", default=[], help="a sample.json the labels were given on (checked)"
    )
    return p


def _dataset(into: Path) -> tuple[Path, Reading]:
    """The dataset file `--into` names and how it is read: a JSONL file (judgebias's own names), or the dataset of
    the run folder given, read as the run read it (any format, its field names and label words)."""
    if into.is_dir():
        judged = read_run(into)
        return judged.data_path, judged.reading
    if not into.is_file():
        raise UserError(f"{into}: no such dataset file or run folder (--into)")
    return into, JSONL


def _new_name(folder: Path, stem: str) -> Path:
    """`stem.jsonl` in `folder`, or `stem-2.jsonl`, `-3`, ... the first that does not exist: a merge never
    replaces an earlier merge's file."""
    path, number = folder / f"{stem}.jsonl", 1
    while path.exists():
        number += 1
        path = folder / f"{stem}-{number}.jsonl"
    return path


def _sample(args: argparse.Namespace) -> None:
    """`sample`: draw the items, write the sample and its labelling page, and say where they are."""
    run = read_run(args.run)
    out = args.out or args.run / "review"
    strategy = Strategy(args.strategy)
    n = args.n
    if n == "auto" or args.width is not None:
        width = check_width(args.width, n)
        judged, errors, _ = _errors(run)
        n = labels_needed(judged, errors, width, weighted=strategy is Strategy.uncertain)
        if n is None:
            raise UserError(
                f"no number of labels makes the interval {width:g} wide on these items (review plan says why)"
            )
        n = max(1, n - errors.labels)
    items = write_sample(
        run,
        out,
        n=n,
        fraction=args.fraction,
        strategy=strategy,
        seed=args.seed,
        include_gold=args.include_gold,
    )
    info = json.loads((out / SAMPLE_INFO).read_text(encoding="utf-8"))
    page = write_labelling(out, items, info["sample_id"])
    say(
        f"sampled {len(items)} of {info['candidates']} candidate items ({strategy.value}, seed {args.seed}; "
        f"{info['skipped_labelled']} labelled items skipped)\n"
        f"labelling page: {page}\nto label elsewhere: {out / 'labels.csv'} (fill label: a, b or tie)"
    )


def _errors(run: JudgedRun) -> tuple[list[Judged], Errors, dict[str, Any]]:
    """The run's judged items, the judge's errors on the labelled ones, and its summary's `corrected` section."""
    summary = (
        json.loads((RunDir(run.folder).summary).read_text(encoding="utf-8"))
        if RunDir(run.folder).summary.is_file()
        else {}
    )
    corrected = summary.get("corrected") or {}
    figure = (corrected.get("figures") or {}).get(WIN_RATE.name) or {}
    source = (corrected.get("design") or {}).get("source")
    drawn = (
        set(json.loads(Path(source).read_text(encoding="utf-8")).get("ids") or [])
        if source and Path(source).is_file()
        else None
    )
    judged_items, scores, verdicts = [], {}, {}
    for line in run.verdicts:
        item = run.items.get(str(line.get("id")))
        if item is None or line.get("verdict") == "error":
            continue
        entry = judged(line, item)
        judged_items.append(entry)
        verdicts[entry.id] = WIN_SCORE.get(str(line.get("verdict")), 0.5)
        labels = [vote for vote in item.human_votes if vote in SCORE] or ([item.human] if item.human in SCORE else [])
        if labels and (drawn is None or entry.id in drawn):
            scores[entry.id] = sum(SCORE[label] for label in labels) / len(labels)
    errors = errors_of(judged_items, scores, verdicts, float(figure.get("lambda", 0.0)))
    return judged_items, errors, corrected


def _plan(args: argparse.Namespace) -> None:
    """`plan`: how many labels the people's win rate needs for an interval of --width."""
    run = read_run(args.run)
    judged_items, errors, corrected = _errors(run)
    if not judged_items:
        raise UserError(f"{args.run}: no judged item to plan labels for")
    say(plan_text(str(args.run), judged_items, errors, args.width, corrected))


def _merge(args: argparse.Namespace) -> None:
    """`merge`: write the labelled copy of the dataset, and say how to judge it."""
    data, reading = _dataset(args.into)
    if args.add and args.out is None:
        raise UserError("--add adds the labels to an existing labelled file: name it with --out")
    out = args.out or _new_name(Path.cwd(), f"{data.stem}.labelled")
    for given in args.sample:
        if not given.is_file():
            raise UserError(f"--sample {given}: no such sample.json")
    samples = Samples.near([*args.labels, args.into], args.sample)
    merged = merge_labels(args.labels, data, out, add=args.add, samples=samples, reading=reading)
    if samples.unchecked:
        say(
            f"note: the labels name sample {', '.join(sorted(samples.unchecked))}, whose sample.json was not found: "
            "they were not checked against it (pass --sample DIR/sample.json to check them)"
        )
    say(
        f"merged {merged.labels} labels from {len(merged.annotators)} annotators "
        f"({', '.join(merged.annotators)}) onto {merged.items} items ({merged.skipped} skips left out; "
        f"{merged.human_set} items given `human` = their majority)\n"
        f"labelled data: {merged.out}\n"
        f"judge it: python -m judgebias.run data=jsonl data.path={merged.out}"
        + "".join(f" calibration.sample={path}" for path in list(samples.files.values())[:1])
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one review command; a user mistake is one line on stderr and exit 2."""
    startup.run_begins()  # from here on Ctrl-C is a KeyboardInterrupt, said in one line by the caller
    args = parser().parse_args(argv)
    work = {"sample": _sample, "merge": _merge, "plan": _plan}[args.command]
    return run_command(lambda: work(args))


if __name__ == "__main__":
    exit_as_command(main, "interrupted: nothing was written (every file is written whole, or not at all)")
