"""judgebias: pairwise LLM-as-a-judge runs that survive scrutiny.

Every item is judged twice, once with the answers swapped; a preference is kept only when both orders agree.
"""

import sys

if sys.argv[:1] == ["-m"]:  # `python -m judgebias.<command>` is starting (runpy sets argv[0] to "-m" meanwhile)
    # Ctrl-C while the command's packages import: one line, exit 130 (the guard installs itself); each main undoes it
    from judgebias.process import startup  # noqa: F401

from judgebias.core.verdict import debiased_verdict, position_consistency, win_rate

__all__ = ["debiased_verdict", "position_consistency", "win_rate"]
