"""Command line: `python -m judgebias.run [overrides]`. Converts the Hydra config and calls run_experiment.

Everything a user can get wrong ends here as one line on stderr and a non-zero exit, never a traceback. In a
multirun a failing job records its failure in its own summary.json and returns, so the other jobs and the
end-of-sweep table still happen.
"""

from __future__ import annotations

from judgebias.process import startup  # isort: skip  (first: Ctrl-C during the imports below is one line)

import contextlib
import dataclasses
import logging
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import ConfigCompositionException, OverrideParseException, SearchPathException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException
from yaml import YAMLError

from judgebias.cli import collector
from judgebias.cli.clusterlog import summarise_sacct_warnings
from judgebias.cli.composition import config_flags_first, mode_probe_skipped, opened_maps
from judgebias.cli.config_errors import (
    HeldStderr,
    composition_message,
    config_dirs,
    held_stderr,
    unknown_key_message,
)
from judgebias.cli.ending import EXIT_INTERRUPTED, Ending, ending_of_error, ending_of_summary
from judgebias.cli.pasted import pasted_secret_error
from judgebias.cli.rundir import REUSE_FLAG, refused_folder, register_resolver
from judgebias.cli.schemas import register_schemas
from judgebias.cli.termination import stop_on_sigterm
from judgebias.config.schema import Config
from judgebias.core.errors import EXIT_USER_ERROR, SecretInConfig, UserError
from judgebias.core.fields import as_typed
from judgebias.core.redaction import REDACTED, RedactingFilter, Redactor, replace_secrets
from judgebias.core.summary import SUMMARY_SCHEMA_VERSION
from judgebias.io.files import write_json, write_text_atomic
from judgebias.io.run_dir import RunDir
from judgebias.process.command import say


def to_config(cfg: DictConfig) -> Config:
    """The typed Config of a composed Hydra config, or a UserError naming the key that is missing."""
    try:
        config = OmegaConf.to_object(cfg)
    except MissingMandatoryValue as error:
        key = error.full_key or "a key"
        raise UserError(f"{key} is required: pass {key}=... on the command line") from None
    except OmegaConfBaseException as error:
        raise UserError(f"config error: {str(error).splitlines()[0]}") from None
    assert isinstance(config, Config)
    unknown = _unknown_keys(config)
    if unknown:
        raise UserError(unknown_key_message(unknown[0], added=True))
    return config


def _unknown_keys(node: Any, prefix: str = "") -> list[str]:
    """Keys added with `+key=...` that no schema field reads: OmegaConf keeps them as stray attributes, unused."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        fields = [field.name for field in dataclasses.fields(node)]
        stray = [prefix + name for name in vars(node) if name not in fields]
        return stray + [key for name in fields for key in _unknown_keys(getattr(node, name), f"{prefix}{name}.")]
    if isinstance(node, dict):
        return [key for name, value in node.items() for key in _unknown_keys(value, f"{prefix}{name}.")]
    return []


def job(cfg: DictConfig) -> int:
    """One Hydra job: run the experiment into Hydra's output directory; return the exit code."""
    from judgebias.engine.runner import run_experiment

    startup.run_begins()  # Ctrl-C from here on keeps the replies received and says so (below)
    held = held_stderr()
    if held is not None:
        held.release()  # the config composed: from here on every message is the job's own
    run = RunDir(Path(HydraConfig.get().runtime.output_dir))
    multirun = HydraConfig.get().mode == RunMode.MULTIRUN
    collector.resume(freeze=not multirun)  # start-up is over (see collector)
    for noisy in ("httpx2", "httpx", "openai"):  # one INFO line per request would bury the summary
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        with stop_on_sigterm():
            config = to_config(cfg)
            keep_secrets_out(run, Redactor.for_config(dataclasses.asdict(config)))
            summary = run_experiment(config, run, overrides=[as_typed(o) for o in HydraConfig.get().overrides.task])
    except BaseException as error:
        ending = ending_of_error(error, multirun=multirun)
        if ending is None:
            raise
        if isinstance(error, SecretInConfig):
            pasted = error.secret
            scrub(run, lambda text: text.replace(pasted, REDACTED))
        return _end(ending, cfg, run)
    if not multirun:
        _say_where(run)
    return _end(ending_of_summary(summary), cfg, run)


def _end(ending: Ending, cfg: DictConfig, run: RunDir) -> int:
    """Say how the job ended, write its failure record as summary.json if it has one (once), return its exit code."""
    if ending.traceback:
        traceback.print_exc()
    if ending.message is not None:
        say(ending.message, error=not ending.to_stdout)
    if ending.failure is not None:
        with contextlib.suppress(OSError):  # a full disk already said why: the failure record is a courtesy
            write_json(run.summary, _failure(cfg, ending.failure) | {"status": ending.status})
    return ending.code


def _say_where(run: RunDir) -> None:
    """The run folder and the report, as the last lines of every run."""
    say(f"run folder: {run.root}")
    if run.report.exists():
        say(f"report: {run.report}")


def keep_secrets_out(run: RunDir, redactor: Redactor) -> None:
    """Take the run's known secrets out of Hydra's dumps (a base_url's password from a YAML file), and out of every
    log record before a handler writes it (run.log, the terminal)."""
    scrub(run, lambda text: replace_secrets(text, redactor.secrets()))
    log_filter = RedactingFilter(redactor.known)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(log_filter)


def scrub(run: RunDir, redact: Callable[[str], str]) -> None:
    """Rewrite Hydra's dumps of the config (the job's and the sweep's) through `redact`, where it changes them."""
    for path in run.hydra_dumps:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            clean = redact(text)
            if clean != text:
                write_text_atomic(path, clean)


def _failure(cfg: DictConfig, message: str) -> dict[str, Any]:
    """The summary.json of a job that could not run, so a sweep's table still lists it."""

    choices = HydraConfig.get().runtime.choices

    def name(group: str) -> Any:
        chosen = OmegaConf.select(cfg, f"{group}.name", default=None, throw_on_missing=False)
        return chosen if chosen is not None else choices.get(group)

    return {
        "status": "failed",
        "error": message,
        "judge": name("judge"),
        "rubric": name("rubric"),
        "data": name("data"),
        "schema_version": SUMMARY_SCHEMA_VERSION,
    }


@hydra.main(version_base="1.3", config_path="pkg://judgebias.conf", config_name="config")
def _entry(cfg: DictConfig) -> None:
    code = job(cfg)
    if code == EXIT_INTERRUPTED or (code and HydraConfig.get().mode != RunMode.MULTIRUN):
        sys.exit(code)  # Ctrl-C stops a whole sweep, not just its current job


def main() -> None:
    """Console entry point (also `python -m judgebias.run`)."""
    startup.quiet_interrupts(startup.RUN_NOT_STARTED)  # the console script imports this module before main
    try:
        with collector.paused():  # until the run starts (see collector)
            _start()
    except KeyboardInterrupt:  # after the run ended, while Hydra finishes
        print("\njudgebias: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # the reader went away (`--help | head`): nothing more to say, and nowhere to say it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)


def _start() -> None:
    """Register the schema, check the command line, and hand over to Hydra; Hydra's own errors in one line."""
    if "--version" in sys.argv[1:]:  # judgebias's own version, not Hydra's (which Hydra's flag would print)
        from judgebias.io.versions import installed_versions

        print(f"judgebias {installed_versions(['judgebias'])['judgebias'] or 'unknown (not installed)'}")
        sys.exit(0)
    register_schemas()
    register_resolver()
    reuse = REUSE_FLAG in sys.argv[1:]
    sys.argv = [arg for arg in sys.argv if arg != REUSE_FLAG]  # judgebias's own flag: Hydra would refuse it
    sys.argv[1:] = opened_maps(config_flags_first(sys.argv[1:]))
    refused = pasted_secret_error(sys.argv[1:]) or refused_folder(sys.argv[1:], reuse=reuse)
    if refused:
        say(f"judgebias: error: {refused}", error=True)
        sys.exit(EXIT_USER_ERROR)
    real = sys.stderr
    summarise_sacct_warnings(real)  # said while the sweep waits, not held back with Hydra's start-up messages
    held = HeldStderr(real)
    sys.stderr = held  # Hydra's multi-line composition errors are replaced by one line (see config_errors)
    try:
        with mode_probe_skipped():  # the config is composed once, not twice, when nothing can set hydra.mode
            _entry()
    except SystemExit as stop:
        failure = stop.__context__
        if isinstance(failure, BrokenPipeError):
            raise failure from None
        if stop.code == 1 and isinstance(
            failure, ConfigCompositionException | OverrideParseException | SearchPathException | YAMLError
        ):
            # Hydra could not compose the config (a bad override): a user error, said in one line.
            held.drop()
            sys.stderr = real
            say(f"judgebias: error: {composition_message(failure, config_dirs(sys.argv[1:]))}", error=True)
            sys.exit(EXIT_USER_ERROR)
        raise
    finally:
        held.release()
        sys.stderr = real


if __name__ == "__main__":
    main()
