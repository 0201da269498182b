"""Write the PRISM-Bench sample: ``python -m omnieval.benchmarks.prism.make_sample OUT_DIR``.

The repository's copy lives in ``data/prism-sample`` (DVC-tracked); the output is identical on
every run, so regenerating it changes nothing unless the generator changed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, write the sample, print what was written; 0 on success, 2 on bad input."""
    from omnieval.benchmarks.prism._sample import write_prism_sample
    from omnieval.errors import OmnievalError

    parser = argparse.ArgumentParser(
        prog="python -m omnieval.benchmarks.prism.make_sample",
        description="Write the PRISM-Bench sample dataset (manifest.jsonl, videos/).",
    )
    parser.add_argument("out", type=Path, help="output folder (e.g. data/prism-sample)")
    parser.add_argument("--ids", nargs="+", default=None, help="write only these clips (e.g. on-01 mix-03)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        summary = write_prism_sample(args.out, ids=args.ids)
    except OmnievalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    seconds = time.perf_counter() - start
    print(
        f"wrote {summary.n_instances} clips to {summary.root} ({summary.size_bytes / 1e6:.2f} MB, {seconds:.1f} s)"
    )
    for subset, n in summary.counts.items():
        print(f"  {subset}: {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
