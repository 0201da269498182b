"""Cold vs warm `omnieval run` on the bundled sample: the content cache must make the second run cheap."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml


def run() -> dict[str, Any]:
    from omnieval.runner import run_suite

    with tempfile.TemporaryDirectory(prefix="omnieval-bench-") as tmp_name:
        tmp = Path(tmp_name)
        suite = yaml.safe_load(Path("pipelines/nightly.yaml").read_text())
        suite["suite"] = "bench"
        suite["state_dir"] = str(tmp / "state")
        suite["runs_dir"] = str(tmp / "runs")
        suite_path = tmp / "bench.yaml"
        suite_path.write_text(yaml.safe_dump(suite))
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp / 'mlflow.db'}"
        os.environ["OMNIEVAL_MLFLOW_ARTIFACTS"] = str(tmp / "artifacts")
        started = time.monotonic()
        cold = run_suite(suite_path, sync_dvc=False)
        cold_s = time.monotonic() - started
        started = time.monotonic()
        warm = run_suite(suite_path, sync_dvc=False)
        warm_s = time.monotonic() - started
    skipped = sum(bool(v) for v in warm["skipped"].values())
    stages = cold.get("stage_seconds", {})
    limit = (suite.get("dataset") or {}).get("limit")
    print(
        f"pipeline suite: pipelines/nightly.yaml, {len(suite.get('systems') or {})} systems, "
        + (f"the first {limit} transitions (dataset.limit)" if limit else "every transition")
        + "; judge model calls include the drift check's anchors",
        flush=True,
    )
    print(
        "pipeline cold flow per stage: "
        + ", ".join(f"{name} {s:.1f} s" for name, s in stages.items())
        + f" (judge: {cold['judge_model_calls']} model calls"
        + (
            f", {stages['judge'] / cold['judge_model_calls']:.1f} s per verdict incl. loading)"
            if cold["judge_model_calls"] and "judge" in stages
            else ")"
        ),
        flush=True,
    )
    print(
        f"pipeline cold/warm: ratio {cold_s / warm_s:.1f}x (cold {cold_s:.1f} s, warm {warm_s:.1f} s); "
        f"warm run skipped {skipped}/{len(warm['skipped'])} stages, judge model calls "
        f"{cold['judge_model_calls']} cold -> {warm['judge_model_calls']} warm"
    )
    return {
        "cold_s": cold_s,
        "warm_s": warm_s,
        "ratio": cold_s / warm_s,
        "warm_skipped": warm["skipped"],
        "judge_calls_cold": cold["judge_model_calls"],
        "judge_calls_warm": warm["judge_model_calls"],
        "cold_stage_seconds": stages,
        "warm_stage_seconds": warm.get("stage_seconds", {}),
    }
