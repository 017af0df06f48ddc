"""submitit's status warnings in the submitting process, said once and explained.

submitit polls `sacct` for the states of a sweep's jobs (after 0, 2, 4, 8 ... seconds, then every minute). On a
cluster without accounting every poll fails, and each failure is logged as "Bypassing sacct error ..., status may
be inaccurate" on stderr, on stdout and in Hydra's log: lines that bury the sweep's own output and sound worse
than they are. The jobs are not affected; only how submitit learns that a job ended changes.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

SACCT_FAILURE = "Bypassing sacct error"
NOTICE = (
    "judgebias: note: sacct cannot report job states on this cluster (without SLURM accounting it answers "
    "'Slurm accounting storage is disabled'), so submitit learns that a job ended from the result file the job "
    "writes; its repeated 'Bypassing sacct error ... status may be inaccurate' warnings are shown this once. "
    "The jobs are not affected. A job killed outright (SIGKILL, a node failure) leaves no result file and the "
    "sweep waits for it: stop the sweep with Ctrl-C and run `python -m judgebias.aggregate SWEEP_DIR`."
)


class SacctWarnings(logging.Filter):
    """Drops submitit's sacct-failure warnings; the first one is replaced by NOTICE, written to `stream`."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self.stream = stream
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        """False (drop) for a sacct failure; every other record passes unchanged."""
        if SACCT_FAILURE not in record.getMessage():
            return True
        self.count += 1
        if self.count == 1:
            print(NOTICE, file=self.stream or sys.stderr, flush=True)
        return False


def summarise_sacct_warnings(stream: TextIO | None = None) -> SacctWarnings:
    """Install the filter on submitit's logger (once; before or after submitit configures it); NOTICE to `stream`."""
    logger = logging.getLogger("submitit")
    for installed in logger.filters:
        if isinstance(installed, SacctWarnings):
            return installed
    warnings = SacctWarnings(stream)
    logger.addFilter(warnings)
    return warnings
