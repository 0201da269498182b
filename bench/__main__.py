"""`python -m bench [NAME ...]`: run the benchmarks and print their ratios.

Each module ``bench.<name>`` exposes ``run() -> dict``; it prints its own lines. Timing lives here,
never in tests.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path

BENCHES = (
    "pipeline",
    "metrics",
    "analysis",
    "heteronyms",
    "faults",
    "scale",
    "kill",
    "judge",
    "judge_ranking",
    "presence",
)


def main(argv: list[str]) -> int:
    names = argv or list(BENCHES)
    figures: dict[str, object] = {}
    failed = 0
    for name in names:
        print(f"== bench {name}", flush=True)
        started = time.monotonic()
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            print(f"  unavailable: {exc}")
            continue
        try:
            figures[name] = module.run()
        except Exception as exc:  # one failing bench must not hide the others' figures
            failed += 1
            print(f"  FAILED: {type(exc).__name__}: {exc}")
        print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
    out = Path("bench-out")
    out.mkdir(exist_ok=True)
    (out / "figures.json").write_text(json.dumps(figures, indent=2, default=str) + "\n")
    print(f"figures written to {out / 'figures.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
