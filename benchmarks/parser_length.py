"""Time every reply style's parser on adversarial replies of 250 KB, 500 KB and 1 MB: the time must be linear.

Usage: python benchmarks/parser_length.py [--sizes 250000,500000,1000000]
Each shape repeats one pattern a regular expression could backtrack over (newlines, spaces, dots, brackets,
"Output (a) ", numbered lines) up to the size, then ends with a verdict on its own line. The ratio column is the
time at the largest size over the time at the smallest, divided by the size ratio: near 1 is linear, a quadratic
parser shows the size ratio itself (4 for 250 KB -> 1 MB).
"""

from __future__ import annotations

import argparse
import time

from judgebias.core.parsing import STYLES, parse_reply

SHAPES = {
    "newlines": "\n",
    "spaces": " ",
    "dots": ".",
    "crlf": "\r\n",
    "brackets": "[[",
    "outputs": "Output (a) ",
    "numbered": "1.\n",
    "answer lines": "answer\n",
    "claims": "A is better in detail.\n",
}


def seconds(text: str, style: str) -> float:
    """The time of one parse, in seconds."""
    start = time.perf_counter()
    parse_reply(text, style=style)
    return time.perf_counter() - start


def main() -> None:
    """Print one row per style and shape: the seconds at each size and the linearity ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250000,500000,1000000")
    sizes = [int(size) for size in parser.parse_args().sizes.split(",")]
    print(f"{'style':10} {'shape':13} " + " ".join(f"{size // 1000:>6} KB" for size in sizes) + "  ratio")
    for style in STYLES:
        for name, unit in SHAPES.items():
            times = [seconds(unit * (size // len(unit)) + "\nA\n", style) for size in sizes]
            ratio = (times[-1] / max(times[0], 1e-6)) / (sizes[-1] / sizes[0])
            print(f"{style:10} {name:13} " + " ".join(f"{t:8.3f}s" for t in times) + f"  {ratio:5.2f}")


if __name__ == "__main__":
    main()
