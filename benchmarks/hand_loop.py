"""The loop a user would write instead of judgebias, for the scale benchmark's baseline: read each pair, ask a
judge in both orders (the `longer` rule, as judge=longer decides), reconcile, write one verdict line, and print the
win rate and position consistency at the end.

Usage: python benchmarks/hand_loop.py ITEMS.jsonl OUT.jsonl
"""

from __future__ import annotations

import json
import sys


def judge(first: str, second: str) -> str:
    """The longer answer wins: "B" when the second shown is longer, else "A"."""
    return "B" if len(second) > len(first) else "A"


def main() -> None:
    items, out = sys.argv[1], sys.argv[2]
    score = consistent = n = 0.0
    with open(items, encoding="utf-8") as source, open(out, "w", encoding="utf-8") as sink:
        for line in source:
            item = json.loads(line)
            a, b = item["a"], item["b"]
            call1, call2 = judge(a, b), judge(b, a)
            back = {"A": "B", "B": "A"}[call2]
            verdict = ("1" if call1 == "A" else "2") if call1 == back else "tie"
            sink.write(json.dumps({"id": item["id"], "verdict": verdict, "call1": call1, "call2": call2}) + "\n")
            score += {"1": 1.0, "tie": 0.5, "2": 0.0}[verdict]
            consistent += call1 == back
            n += 1
    print(json.dumps({"n": n, "win_rate": score / n, "position_consistency": consistent / n}))


if __name__ == "__main__":
    main()
