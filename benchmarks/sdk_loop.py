"""Baselines for benchmarks/run.py: the official `openai` SDK alone, sending the requests judgebias would send.

Usage: python benchmarks/sdk_loop.py --url URL --requests FILE [--concurrency 64] [--sequential] [--limit N]

FILE holds one JSON object per line with the chat `messages` of one call, two lines per item (a first, then b
first). The SDK is imported and the client built before the clock starts; the clock stops when the last reply
is in. Prints one JSON line: {"seconds": ..., "calls": ...}.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def main() -> None:
    """Send the requests concurrently (a bare thread-pool loop) or one after the other; print the time taken."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--requests", required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--sequential", action="store_true", help="one item at a time, its two calls in turn")
    parser.add_argument("--limit", type=int, default=None, help="only the first N requests")
    parser.add_argument("--model", default="local-model")
    args = parser.parse_args()

    import openai

    with open(args.requests, encoding="utf-8") as file:
        bodies = [json.loads(line)["messages"] for line in file if line.strip()]
    if args.limit is not None:
        bodies = bodies[: args.limit]
    client = openai.OpenAI(base_url=args.url, api_key="no-key", timeout=120.0, max_retries=0)

    def call(messages: list[dict[str, str]]) -> Any:
        response = client.chat.completions.create(
            model=args.model, messages=messages, temperature=0.0, max_tokens=16, seed=0
        )
        return response.choices[0].message.content

    started = time.perf_counter()
    if args.sequential:
        for messages in bodies:
            call(messages)
    else:
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            list(pool.map(call, bodies))
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "calls": len(bodies)}))


if __name__ == "__main__":
    main()
