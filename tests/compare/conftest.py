"""Synthetic run folders (FORMATS.md section 4) for comparison tests."""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

TEXT_CRITERIA = (
    "alignment_with_metadata",
    "natural_flow_from_current_narration",
    "satisfaction_of_generation_conditions",
    "semantic_consistency_with_ground_truth",
)
SYSTEMS = ("alpha", "beta")
N = 30


def storybench_scores(seed: int = 0, n: int = N) -> pd.DataFrame:
    """BERTScore and one text judge per (system, instance), seeded."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for s, system in enumerate(SYSTEMS):
        for i in range(n):
            iid = f"book/p{i:02d}__p{i + 1:02d}"
            base = dict(benchmark="storybench", system=system, instance_id=iid, index=i, status="ok")
            rows.append(
                {
                    **base,
                    "track": "text",
                    "component": "bertscore_f1",
                    "judge": "",
                    "criterion": "value",
                    "panel": "",
                    "value": float(np.clip(rng.normal(0.5 + 0.1 * s, 0.1), 0, 1)),
                }
            )
            for criterion in TEXT_CRITERIA:
                rows.append(
                    {
                        **base,
                        "track": "text",
                        "component": "judge",
                        "judge": "j1",
                        "criterion": criterion,
                        "panel": "cpu",
                        "value": float(rng.integers(3, 10)),
                    }
                )
    return pd.DataFrame(rows)


def noisy_scores(n: int = N, seed: int = 5, sd: float = 0.03) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A baseline and a rerun whose BERTScores carry zero-mean noise: no real change, a GO."""
    before = storybench_scores(n=n)
    after = before.copy()
    mask = after.component == "bertscore_f1"
    after.loc[mask, "value"] = (
        after.loc[mask, "value"] + np.random.default_rng(seed).normal(0.0, sd, int(mask.sum()))
    ).clip(0.0, 1.0)
    return before, after


LINEAGE: dict[str, Any] = {
    "suite": "demo",
    "dataset": {"name": "demo", "path": "data/demo", "version": "v1", "dvc_md5": "md5a", "git_rev": "g1"},
    "code": {"git_sha": "g1", "git_dirty": False, "package_digest": "p1"},
    "systems": {s: {"kind": "import"} for s in SYSTEMS},
    "metrics": {
        s: {"metrics": {"bertscore_f1": {"version": "2", "encoder": {"sha256": "e1", "path": "/x"}}}}
        for s in SYSTEMS
    },
    "judges": {
        "cpu": {
            "judges": {"j1": {"model": "m1", "revision": "r1", "weights_sha256": {"m.gguf": "w1"}}},
            "prompts": {"text": {"sha256": "a" * 64, "variant": "native", "version": "storybench-judge/1"}},
            "repair_prompt": {"sha256": "c" * 64},
            "statuses": {},
        }
    },
    "seeds": {},
}


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """Write a run folder ``tmp/runs/demo/<run_id>`` and return it; runs written later are newer."""
    counter = {"t": time.time() - 1000}

    def make(
        run_id: str,
        scores: pd.DataFrame | None = None,
        *,
        lineage: dict[str, Any] | None = None,
        candidates: dict[str, str] | None = None,
        drift: dict[str, Any] | None = None,
        suite: str = "demo",
    ) -> Path:
        folder = tmp_path / "runs" / suite / run_id
        folder.mkdir(parents=True)
        lin = copy.deepcopy(LINEAGE if lineage is None else lineage)
        (folder / "lineage.json").write_text(json.dumps({"run_id": run_id, **lin}), encoding="utf-8")
        (storybench_scores() if scores is None else scores).to_parquet(folder / "scores.parquet")
        (folder / "leaderboard.json").write_text("{}", encoding="utf-8")
        (folder / "mlflow.json").write_text(json.dumps({"parent": run_id, "systems": {}, "analyses": {}}))
        for system, text in (candidates or {s: f"story of {s}" for s in SYSTEMS}).items():
            target = folder / "candidates" / system / "text" / "0"
            target.mkdir(parents=True)
            (target / "generated.txt").write_text(text, encoding="utf-8")
        if drift is not None:
            (folder / "drift.json").write_text(json.dumps(drift), encoding="utf-8")
        counter["t"] += 10
        os.utime(folder / "lineage.json", (counter["t"], counter["t"]))
        return folder

    return make
