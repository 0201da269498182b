"""``omnieval make-sample storybench OUT``: write the sample dataset, then validate it."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from omnieval.benchmarks._sample_command import run_sample_command, sample_parser
from omnieval.benchmarks.storybench._sample._write import SampleSummary, write_sample


def sample_main(argv: Sequence[str], prog: str) -> int:
    """Write the sample, then run the strict validator on it; exit 2 if it does not pass."""
    description = "Write omnieval's Omni-StoryBench sample (4 books, 20 transitions)"
    parser = sample_parser(prog, description, "data/storybench-sample")
    parser.add_argument("--size", type=int, default=256, help="illustration size in pixels (default 256)")
    args = parser.parse_args(argv)

    from omnieval.benchmarks.storybench._record import validate_storybench

    def report(summary: SampleSummary) -> int:
        validation = validate_storybench(summary.root)
        if not validation.ok:
            for problem in validation.problems:
                print(f"  - {problem}", file=sys.stderr)
            return 2
        print(
            f"wrote {summary.n_rows} transitions, {summary.n_pages} pages, {summary.n_books} books to "
            f"{summary.root}"
        )
        return 0

    return run_sample_command(lambda: write_sample(args.out, size=args.size), report)
