"""The sweep table at the end of a multirun: Hydra's callback (config.yaml's hydra.callbacks.aggregate) hands the
sweep folder to judgebias.aggregate, which itself imports no Hydra (so the gate and compare load none)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from judgebias.aggregate import aggregate, exit_code, failed, pending, terminal_width, text_table
from judgebias.core.errors import EXIT_BATCH_PENDING
from judgebias.process.command import say


class AggregateCallback(Callback):
    """At the end of a multirun, aggregate the sweep folder; exit 1 afterwards when a job failed."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Write and print the sweep table (Hydra calls this once every job has returned)."""
        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        report = bool(OmegaConf.select(config, "report", default=True))
        rows = aggregate([sweep_dir], report=report)
        if not rows:
            return
        say(f"\nsweep summary ({sweep_dir}/sweep_summary.md):")
        say(text_table(rows, terminal_width()))
        code = exit_code(rows)
        if code == 1:
            print(f"judgebias: {len(failed(rows))} of {len(rows)} jobs did not finish cleanly", file=sys.stderr)
        elif code == EXIT_BATCH_PENDING:
            print(
                f"judgebias: {len(pending(rows))} of {len(rows)} jobs have batches still out: run the same command "
                "again to collect them",
                file=sys.stderr,
            )
        if code:
            sys.stdout.flush()
            raise SystemExit(code)
