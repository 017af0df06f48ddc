"""Command line: `python -m judgebias.run [overrides]`. Converts the Hydra config and calls run_experiment.

Everything a user can get wrong ends here as one line on stderr and a non-zero exit, never a traceback. In a
multirun a failing job records its failure in its own summary.json and returns, so the other jobs and the
end-of-sweep table still happen.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import re
import sys
import traceback
from pathlib import Path
from typing import Any, TextIO

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import ConfigCompositionException, OverrideParseException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from judgebias.config import Config, register_schemas
from judgebias.errors import SecretInConfig, UserError
from judgebias.files import write_json
from judgebias.redaction import REDACTED

EXIT_CALLS_FAILED = 1
EXIT_CRASHED = 1
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


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
        raise UserError(
            f"{unknown[0]} is not a judgebias setting (added with +{unknown[0]}=...?): check its spelling; "
            f"`python -m judgebias.run --cfg job` lists every key"
        )
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
    from judgebias.runner import run_experiment

    out_dir = Path(HydraConfig.get().runtime.output_dir)
    for noisy in ("httpx2", "httpx", "openai"):  # one INFO line per request would bury the summary
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        summary = run_experiment(to_config(cfg), out_dir)
    except UserError as error:
        if isinstance(error, SecretInConfig):
            scrub(out_dir, error.secret)
        print(f"judgebias: error: {error}", file=sys.stderr)
        write_json(out_dir / "summary.json", _failure(cfg, str(error)))
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print(
            "\njudgebias: interrupted: every reply received so far is in the cache; rerun the same command to resume",
            file=sys.stderr,
        )
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            write_json(out_dir / "summary.json", _failure(cfg, "interrupted"))
        return EXIT_INTERRUPTED
    except Exception as error:
        if HydraConfig.get().mode != RunMode.MULTIRUN:
            raise
        # A launcher re-raises a job's exception after the sweep and then skips the end-of-sweep table.
        traceback.print_exc()
        write_json(out_dir / "summary.json", _failure(cfg, f"{type(error).__name__}: {error}"))
        return EXIT_CRASHED
    if summary.get("failed_calls"):
        print(
            f"judgebias: {summary['failed_calls']} calls failed after their retries "
            f"(errors_call1={summary.get('errors_call1')}, errors_call2={summary.get('errors_call2')}; reasons in "
            f"verdicts.jsonl); rerun the same command to retry only those",
            file=sys.stderr,
        )
        return EXIT_CALLS_FAILED
    return 0


def scrub(out_dir: Path, secret: str) -> None:
    """Remove a credential typed into the config from Hydra's dumps of it (the job's and the sweep's)."""
    dumps = [*out_dir.glob(".hydra/*.yaml"), out_dir.parent / "multirun.yaml"]
    for path in dumps:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            if secret in text:
                path.write_text(text.replace(secret, REDACTED), encoding="utf-8")


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
    }


def composition_error(text: str) -> str:
    """Hydra's multi-line account of a config it could not compose, as one line (the key, the value, the choices)."""
    lines = [line.strip() for line in text.splitlines()]
    if "Config search path:" in lines:
        lines = lines[: lines.index("Config search path:")]
    noise = ("Set the environment variable HYDRA_FULL_ERROR", "reference_type=", "object_type=")
    lines = [line for line in lines if line and not line.startswith(noise)]
    key = next((line.removeprefix("full_key: ") for line in lines if line.startswith("full_key: ")), None)
    lines = [line for line in lines if not line.startswith("full_key: ")]
    choice = re.search(r"Invalid value '(.*)', expected one of \[(.*)\]", text)
    if choice and key:
        return f"{key}={choice.group(1)!r} is not allowed: use one of {choice.group(2)}"
    message, listing = "", False
    for line in lines:
        if message.endswith(":"):
            message, listing = f"{message} {line}", True
        elif listing and not line.endswith(":") and " " not in line:
            message += f", {line}"
        else:
            message, listing = f"{message.rstrip('.')}; {line}" if message else line, False
    return message.replace("Error merging override ", "override ")


class _HeldStderr(io.TextIOBase):
    """stderr that holds what is written until the config is composed, then passes everything through.

    Hydra prints a composition error over several lines before it exits; holding them lets `main` say it in one.
    """

    def __init__(self, real: TextIO) -> None:
        self.real = real
        self.held: list[str] = []
        self.passing = False

    def write(self, text: str) -> int:
        if self.passing:
            return self.real.write(text)
        self.held.append(text)
        return len(text)

    def flush(self) -> None:
        self.real.flush()

    def isatty(self) -> bool:
        return self.real.isatty()

    def fileno(self) -> int:
        return self.real.fileno()

    def release(self) -> None:
        """Pass the held text on, and everything written from now on."""
        if not self.passing:
            self.passing = True
            self.real.write("".join(self.held))
            self.held.clear()


_held: _HeldStderr | None = None


@hydra.main(version_base="1.3", config_path="pkg://judgebias.conf", config_name="config")
def _entry(cfg: DictConfig) -> None:
    if _held is not None:
        _held.release()  # composed: from here on stderr is the job's
    code = job(cfg)
    if code == EXIT_INTERRUPTED or (code and HydraConfig.get().mode != RunMode.MULTIRUN):
        sys.exit(code)  # Ctrl-C stops a whole sweep, not just its current job


def main() -> None:
    """Console entry point (also `python -m judgebias.run`)."""
    global _held
    register_schemas()
    real = sys.stderr
    _held = _HeldStderr(real)
    sys.stderr = _held
    try:
        _entry()
    except SystemExit as stop:
        error = stop.__context__
        if stop.code == 1 and isinstance(error, ConfigCompositionException | OverrideParseException):
            # A bad override or option: Hydra's several lines become one, and it is a user error, not failed calls.
            text = "".join(_held.held) or str(error)  # what Hydra printed about it
            _held.held.clear()
            print(f"judgebias: error: {composition_error(text)}", file=real)
            sys.exit(EXIT_USER_ERROR)
        raise
    finally:
        _held.release()
        sys.stderr = real


if __name__ == "__main__":
    main()
