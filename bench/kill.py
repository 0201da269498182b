"""kill -9 anywhere, in full: four rounds of the harness (a SIGKILL aimed at each of the six stages per
round, 24 kills), printing records lost, duplicates and whether the final scores match an
uninterrupted run (bench/chaos.py)."""

from __future__ import annotations

import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any


def run(rounds: int = 4) -> dict[str, Any]:
    from bench.chaos import run_harness

    with tempfile.TemporaryDirectory(prefix="omnieval-kill-") as tmp:
        report = run_harness(
            Path(tmp), rounds=rounds, seed=0, limit=3, echo=lambda line: print(f"  {line}", flush=True)
        )
    for line in report.lines():
        print(line, flush=True)
    print(f"kill harness verdict: {'PASS' if report.ok else 'FAIL'} ({report.seconds:.0f} s)", flush=True)
    if not report.ok:
        raise RuntimeError(
            "; ".join(report.score_mismatches[:3] + report.half_written[:3]) or "see the lines above"
        )
    return {
        "kills": len(report.kills),
        "kills_per_stage": report.kills_per_stage,
        "missed": report.missed,
        "records_lost": report.records_lost,
        "duplicates": report.duplicate_rows,
        "duplicate_calls": report.duplicate_calls,
        "in_flight_redone": report.in_flight_redone,
        "judge_calls": report.judge_calls,
        "scores_identical": report.scores_identical,
        "half_written": len(report.half_written),
        "seconds": report.seconds,
        "events": [asdict(k) for k in report.kills],
    }
