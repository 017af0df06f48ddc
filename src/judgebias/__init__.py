"""judgebias: pairwise LLM-as-a-judge runs that survive scrutiny.

Every item is judged twice, once with the answers swapped; a preference is kept only when both orders agree.
"""

from judgebias.core.verdict import debiased_verdict, position_consistency, win_rate

__all__ = ["debiased_verdict", "position_consistency", "win_rate"]
