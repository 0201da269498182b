"""The packaged CPU judge across the sample's books: oracle above shuffled on every row?

`python -m bench judge_ranking` judges the first transition of every book in the bundled sample
(rows from all four books, which the default suite's first two transitions are not) with the `cpu`
panel's text judge (its reference-guided ``cpu`` prompt with measured facts; the speech cascade is
left out: it needs ASR), for the oracle and the shuffled floor: 8 verdicts, ~4 min on 2 idle cores.
It prints each row's mean score per system, the means, the seconds per verdict and the judge health
figures (the rules the judge stage writes to ``health.json``, verdict floor lowered to these 8).

CI checks the same ordering on the default suite's rows inside its one real-judge run
(tests/e2e/test_nightly_flow.py); this is the wider measurement, kept out of CI for its cost.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.judge import REPO, SAMPLE

CPU_PANEL = REPO / "src/omnieval/benchmarks/storybench/panels/cpu.yaml"


def _text_only_cpu_panel(folder: Path) -> Path:
    """The shipped cpu panel with only its text track kept."""
    import yaml

    panel = yaml.safe_load(CPU_PANEL.read_text())
    panel["name"] = "cpu-text-only"
    panel["tracks"]["speech"] = {"unavailable": "left out of this measurement (text track only)"}
    path = folder / "cpu-text-only.yaml"
    path.write_text(yaml.safe_dump(panel, sort_keys=False))
    return path


def run() -> dict[str, Any]:
    import omnieval.benchmarks  # noqa: F401  (registers storybench's rubrics and systems)
    from omnieval.benchmarks.storybench._record import load_storybench
    from omnieval.benchmarks.storybench._records import Transition
    from omnieval.judges import judge_health, run_judges
    from omnieval.judges._health import HealthRules
    from omnieval.systems import SYSTEMS

    transitions = load_storybench(SAMPLE).transitions
    first_of_book: dict[str, Transition] = {}
    for transition in transitions:
        first_of_book.setdefault(f"{transition.source}/{transition.book}", transition)
    rows = list(first_of_book.values())
    work = Path(tempfile.mkdtemp(prefix="bench-judge-ranking-"))
    candidates = {"oracle": work / "oracle", "shuffled": work / "shuffled"}
    SYSTEMS.get("oracle")().generate(transitions, candidates["oracle"])
    SYSTEMS.get("shuffled")(seed=0).generate(transitions, candidates["shuffled"])

    started = time.perf_counter()
    result = run_judges(rows, candidates, panel=str(_text_only_cpu_panel(work)), cache_dir=work / "cache")
    per_verdict_s = (time.perf_counter() - started) / max(result.model_calls, 1)
    text = result.scores[result.scores.track == "text"]
    failed = text[text.status != "ok"]
    if len(failed):
        raise RuntimeError(f"{len(failed)} verdict rows not ok: {failed.head().to_dict('records')}")
    per_row = text.groupby(["instance_id", "system"])["value"].mean().unstack("system")
    means = text.groupby("system")["value"].mean()
    health = judge_health(result.judgments, result.scores, HealthRules(min_verdicts=2 * len(rows)))
    figures = health["judges"]["cpu-text-only/cpu-qwen2.5-coder-1.5b"]
    every_row = bool((per_row["oracle"] > per_row["shuffled"]).all())
    print("  conditions: real packaged judge (cpu panel, text track), first transition of each of the")
    print(f"  sample's {len(rows)} books, distinct rows; {result.model_calls} verdicts")
    for instance, row in per_row.iterrows():
        print(f"  {instance}: oracle {row['oracle']:.2f}  shuffled {row['shuffled']:.2f}")
    print(f"  means: oracle {means['oracle']:.2f}  shuffled {means['shuffled']:.2f}")
    print(f"  oracle above shuffled on every row: {'yes' if every_row else 'NO'}")
    print(
        f"  health: degenerate {bool(health['degenerate'])}, {figures['distinct_values']} distinct values, "
        f"identical-criteria share {figures['identical_share']:.0%}"
    )
    print(f"  {per_verdict_s:.1f} s per verdict (model load included)")
    return {
        "rows": len(rows),
        "verdicts": result.model_calls,
        "per_row": {str(k): {s: float(v) for s, v in r.items()} for k, r in per_row.iterrows()},
        "means": {str(k): float(v) for k, v in means.items()},
        "oracle_above_shuffled_every_row": every_row,
        "degenerate": bool(health["degenerate"]),
        "distinct_values": figures["distinct_values"],
        "identical_share": figures["identical_share"],
        "seconds_per_verdict": per_verdict_s,
    }
