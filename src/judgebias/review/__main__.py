"""`python -m judgebias.review`: sample a run for people to label, then merge their labels into the data.

    python -m judgebias.review sample RUN --n 100 [--strategy random|stratified|uncertain] [--seed 0] [--out DIR]
    python -m judgebias.review merge LABELS... --into DATA_OR_RUN [--out FILE]

Exit codes: 0 done, 2 a mistake in the input (one line, `judgebias: error: ...`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from judgebias.core.errors import UserError
from judgebias.core.sampling import Strategy
from judgebias.process import startup
from judgebias.process.command import CommandParser, exit_as_command, run_command, say
from judgebias.review.labels import Samples, merge_labels
from judgebias.review.page import write_labelling
from judgebias.review.sample import SAMPLE_INFO, read_run, write_sample


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a number of items (1 or more)")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in (0, 1] (e.g. 0.1 for 10%)")
    return value


def parser() -> argparse.ArgumentParser:
    """The command line of the review loop."""
    p = CommandParser(prog="python -m judgebias.review", description=__doc__.split("\n\n")[0])
    commands = p.add_subparsers(dest="command", required=True)
    sample = commands.add_parser("sample", help="draw items of a run for people to label; write the labelling page")
    sample.add_argument("run", type=Path, help="a run folder, or one job folder of a sweep")
    size = sample.add_mutually_exclusive_group()
    size.add_argument("--n", type=_count, help="how many items (default: 20%% of the unlabelled items)")
    size.add_argument("--fraction", type=_fraction, help="the share of unlabelled items to draw, e.g. 0.1")
    sample.add_argument("--strategy", choices=[s.value for s in Strategy], default=Strategy.random.value)
    sample.add_argument("--seed", type=int, default=0, help="the draw's seed (the same seed draws the same sample)")
    sample.add_argument("--out", type=Path, help="where to write the sample (default: RUN/review)")
    sample.add_argument(
        "--include-gold",
        action="store_true",
        help="also sample items whose only label is the dataset's `human` (to measure people against it)",
    )
    merge = commands.add_parser("merge", help="write human_votes from label files into a copy of the dataset")
    merge.add_argument("labels", type=Path, nargs="+", help="label files: the page's .jsonl exports or filled .csv")
    merge.add_argument("--into", type=Path, required=True, help="the dataset JSONL, or a run folder (its dataset)")
    merge.add_argument("--out", type=Path, help="the labelled copy (default: a new ./DATASET.labelled[-N].jsonl)")
    merge.add_argument("--add", action="store_true", help="add the labels to the --out file that exists already")
    merge.add_argument(
        "--sample", type=Path, action="append", default=[], help="a sample.json the labels were given on (checked)"
    )
    return p


def _dataset(into: Path) -> Path:
    """The dataset file `--into` names: a JSONL file, or the dataset of the run folder given."""
    if into.is_dir():
        return read_run(into).data_path
    if not into.is_file():
        raise UserError(f"{into}: no such dataset file or run folder (--into)")
    return into


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
    items = write_sample(
        run,
        out,
        n=args.n,
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


def _merge(args: argparse.Namespace) -> None:
    """`merge`: write the labelled copy of the dataset, and say how to judge it."""
    data = _dataset(args.into)
    if args.add and args.out is None:
        raise UserError("--add adds the labels to an existing labelled file: name it with --out")
    out = args.out or _new_name(Path.cwd(), f"{data.stem}.labelled")
    for given in args.sample:
        if not given.is_file():
            raise UserError(f"--sample {given}: no such sample.json")
    samples = Samples.near([*args.labels, args.into], args.sample)
    merged = merge_labels(args.labels, data, out, add=args.add, samples=samples)
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
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one review command; a user mistake is one line on stderr and exit 2."""
    startup.run_begins()  # from here on Ctrl-C is a KeyboardInterrupt, said in one line by the caller
    args = parser().parse_args(argv)
    return run_command(lambda: _sample(args) if args.command == "sample" else _merge(args))


if __name__ == "__main__":
    exit_as_command(main, "interrupted: nothing was written (every file is written whole, or not at all)")
