"""judgebias from Python (a notebook): run an experiment with the command line's overrides, read a run's verdicts.

    from judgebias.api import run, verdicts
    done = run("data=file", "data.path=pairs.csv", "data.fields.a=response_v1", "data.fields.b=response_v2")
    done.summary["headline"]["text"]        # "bot-v2 vs bot-v1: ..."
    table = verdicts(done.folder)           # one row per item (pandas: pip install 'judgebias[notebook]')

`run` composes the same configs with Hydra's compose API, runs the same experiment into a run folder of its own
(outputs/<date>/<time> under the current folder, or `out`), and returns that folder with the typed summary; the
cache is shared with the command line's runs, so a notebook rerun costs nothing. A mistake is a UserError with the
one line the command line prints.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from judgebias.core.errors import UserError
from judgebias.core.redaction import Redactor
from judgebias.core.summary import DryRunEstimate, Summary
from judgebias.io.run_dir import RunDir

if TYPE_CHECKING:
    import pandas

__all__ = ["Run", "run", "verdicts"]


@dataclass(frozen=True)
class Run:
    """A finished run: its folder (verdicts.jsonl, summary.json, report.html, ...) and its summary (with dry_run=true:
    the estimate dry_run.json holds)."""

    folder: Path
    summary: Summary | DryRunEstimate


def run(*overrides: str, config_dir: str | Path | None = None, out: str | Path | None = None) -> Run:
    """Run one experiment, as `python -m judgebias.run *overrides` would (`config_dir`: --config-dir); sweeps (`-m`)
    stay on the command line. The run's folder is `out` (which must not exist yet, or be empty) or a new one."""
    from hydra import compose, initialize_config_module

    from judgebias.cli.composition import opened_maps
    from judgebias.cli.config_errors import composition_message
    from judgebias.cli.rundir import register_resolver
    from judgebias.cli.schemas import register_schemas
    from judgebias.engine.runner import run_experiment
    from judgebias.run import keep_secrets_out, to_config

    register_schemas()
    register_resolver()
    given = opened_maps(list(overrides))
    if config_dir is not None:
        given.append(f"hydra.searchpath=[file://{Path(config_dir).expanduser().absolute()}]")
    try:
        with initialize_config_module("judgebias.conf", version_base="1.3"):
            cfg = compose("config", overrides=given)
    except Exception as error:  # Hydra's composition errors, said as the command line says them
        dirs = [Path(config_dir)] if config_dir is not None else []
        raise UserError(composition_message(error, dirs)) from None
    config = to_config(cfg)
    folder = _new_folder(out)
    folder_run = RunDir(folder)
    keep_secrets_out(folder_run, Redactor.for_config(dataclasses.asdict(config)))
    summary = run_experiment(config, folder_run, overrides=list(overrides))
    return Run(folder, summary)


def _new_folder(out: str | Path | None) -> Path:
    """`out` when it is new or empty; else a new outputs/<date>/<time> (a suffix when that one is taken)."""
    if out is not None:
        folder = Path(out).expanduser().absolute()
        if folder.exists() and any(folder.iterdir()):
            raise UserError(f"out={folder} is not empty: give a new folder (or none: a new one under outputs/)")
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    base = Path("outputs").absolute() / time.strftime("%Y-%m-%d") / time.strftime("%H-%M-%S")
    folder, number = base, 1
    while True:
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            number += 1
            folder = base.with_name(f"{base.name}_{number}")


def verdicts(folder: str | Path) -> pandas.DataFrame:
    """A run's verdicts.jsonl as a DataFrame, one row per item, the columns as docs/outputs.md lists them (each
    call's record a dict in `calls`). Needs pandas (pip install 'judgebias[notebook]')."""
    try:
        import pandas
    except ImportError:
        raise UserError("reading verdicts into a DataFrame needs pandas: pip install 'judgebias[notebook]'") from None
    path = Path(folder) / RunDir(Path(folder)).verdicts.name
    if not path.is_file():
        raise UserError(f"{path}: no verdicts.jsonl here: give a run folder (a sweep's jobs are its subfolders)")
    rows = []
    with path.open(encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as error:
                raise UserError(f"{path}:{number}: not a verdict line ({error.args[0]})") from None
    return pandas.DataFrame.from_records(rows)
