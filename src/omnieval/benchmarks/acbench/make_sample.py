"""Write the OmniACBench sample: ``python -m omnieval.benchmarks.acbench.make_sample OUT_DIR``.

The repository's copy lives in ``data/acbench-sample`` (DVC-tracked); the output is identical on
every run, so regenerating it changes nothing unless the generator changed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, write the sample, print what was written; 0 on success, 2 on bad input."""
    from omnieval.benchmarks.acbench._sample import IMAGE_SIZE, write_acbench_sample
    from omnieval.errors import OmnievalError

    parser = argparse.ArgumentParser(
        prog="python -m omnieval.benchmarks.acbench.make_sample",
        description="Write the OmniACBench sample dataset (manifest.jsonl, instructions/, images/).",
    )
    parser.add_argument("out", type=Path, help="output folder (e.g. data/acbench-sample)")
    parser.add_argument("--size", type=int, default=IMAGE_SIZE, help="picture side in pixels")
    args = parser.parse_args(argv)
    try:
        summary = write_acbench_sample(args.out, size=args.size)
    except OmnievalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"wrote {summary.n_instances} instances to {summary.root}")
    for feature, values in summary.counts.items():
        print(f"  {feature}: " + ", ".join(f"{value} {n}" for value, n in values.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
