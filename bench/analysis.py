"""Analysis benchmarks at paper scale (32 systems x 900 transitions x 4 tracks x 3 judges x 4 criteria).

1. Paired bootstrap, 10,000 resamples: our vectorised chunked implementation vs a straightforward
   per-resample pandas group-by on the same resamples (timed on a few, per-resample ratio), with the
   baseline's totals checked against ours.
2. Bootstrap working memory as the number of instances grows (traced numpy allocations beyond the
   input matrices), chunked vs all resamples at once.
3. The whole ``omnieval analyze`` on the paper-scale table (every analysis, synthetic human ratings and
   duplicate clusters included), as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

BASELINE_RESAMPLES = 8
DRAWS = 10_000


def _example_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-record table (system, instance, component, judge, value; NaN when invalid), built once."""
    valued = frame["status"].isin(["ok", "repaired"])
    auto = frame[frame["component"].isin(["bertscore_f1", "image_similarity"])]
    auto = auto.assign(value=auto["value"].where(valued[auto.index]), judge="")
    sm = frame[frame["component"] == "speech_meta"].assign(value=lambda d: d["value"].where(valued[d.index]))
    speech = sm.groupby(["system", "instance_id"], sort=False)["value"].mean().reset_index()
    speech = speech.assign(component="speech_meta_accuracy", judge="")
    judge = frame[frame["component"] == "judge"].assign(ok=valued)
    rec = judge.groupby(["system", "instance_id", "track", "judge"], sort=False).agg(
        n=("ok", "sum"), value=("value", "mean")
    )
    rec = rec.reset_index()
    rec["value"] = rec["value"].where(rec["n"] == 4)
    rec["component"] = "judge." + rec["track"]
    cols = ["system", "instance_id", "component", "judge", "value"]
    return pd.concat([auto[cols], speech[cols], rec[cols]], ignore_index=True)


def _baseline_totals(examples: pd.DataFrame, resampled_ids: np.ndarray) -> pd.Series:
    """One resample the straightforward way: replicate the drawn rows, then group-by means."""
    by_instance = examples.set_index("instance_id")
    sample = by_instance.loc[resampled_ids].reset_index()
    per_judge = sample.groupby(["system", "component", "judge"])["value"].mean()
    comp = per_judge.groupby(level=["system", "component"]).mean().reset_index()
    auto = ~comp["component"].str.startswith("judge.")
    comp.loc[auto, "value"] *= 10.0
    return comp.groupby("system")["value"].mean()


def _bench_bootstrap(frame: pd.DataFrame) -> dict[str, Any]:
    from omnieval.benchmarks.storybench._analyses._bootstrap import bootstrap_draws, summarize
    from omnieval.benchmarks.storybench._table import build_table

    table = build_table(frame)
    n = table.n_instances
    start = time.perf_counter()
    boot = bootstrap_draws(table, draws=DRAWS, seed=0)
    summary = summarize(table.systems, boot)
    ours = time.perf_counter() - start

    examples = _example_frame(frame)
    rng = np.random.default_rng(0)  # the same resamples as ours
    ids = np.array(table.instances, dtype=object)
    start = time.perf_counter()
    worst = 0.0
    for b in range(BASELINE_RESAMPLES):
        totals = _baseline_totals(examples, ids[rng.integers(0, n, size=n)])
        got = boot.totals[b]
        worst = max(worst, float(np.nanmax(np.abs(totals.loc[list(table.systems)].to_numpy() - got))))
    baseline_per = (time.perf_counter() - start) / BASELINE_RESAMPLES
    ours_per = ours / DRAWS
    ratio = baseline_per / ours_per
    print(
        f"bootstrap {DRAWS} resamples (32x900): ratio {ratio:.0f}x "
        f"(baseline {baseline_per * DRAWS:.0f} s extrapolated from {BASELINE_RESAMPLES} resamples, "
        f"ours {ours:.2f} s incl. CIs, ranks and {summary['n_pairs']} Holm pairs); "
        f"max |baseline - ours| = {worst:.1e}"
    )
    return {
        "draws": DRAWS,
        "ours_s": ours,
        "baseline_s_per_resample": baseline_per,
        "baseline_s_extrapolated": baseline_per * DRAWS,
        "ratio": ratio,
        "max_abs_difference": worst,
    }


def _bench_memory(frame: pd.DataFrame) -> dict[str, Any]:
    from omnieval.benchmarks.storybench._analyses._bootstrap import _layout, resample
    from omnieval.benchmarks.storybench._table import build_table

    draws = 400
    budget = 200_000
    full = build_table(frame)
    rows: dict[str, Any] = {}
    for n in (900, 3600, 14400):
        # Larger benchmarks by repeating the 900 transitions (the dense table, not a 25M-row frame).
        table = full._take(instances=np.tile(np.arange(full.n_instances), n // full.n_instances))
        lay = _layout(table)
        entry: dict[str, Any] = {"input_mb": (lay.num.nbytes + lay.den.nbytes) / 2**20}
        for label, chunk in (("chunked", budget), ("unchunked", 10**12)):
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            start = time.perf_counter()
            resample(
                lay, n_systems=table.n_systems, draws=draws, seed=0, policy="valid_only", chunk_elements=chunk
            )
            entry[f"{label}_s"] = time.perf_counter() - start
            entry[f"{label}_peak_mb"] = (tracemalloc.get_traced_memory()[1] - base) / 2**20
            tracemalloc.stop()
        rows[str(n)] = entry
        print(
            f"bootstrap memory, {n} instances, {draws} resamples: chunked peak {entry['chunked_peak_mb']:.1f} MB, "
            f"all-at-once peak {entry['unchunked_peak_mb']:.1f} MB (input matrices {entry['input_mb']:.0f} MB)"
        )
    growth = rows["14400"]["chunked_peak_mb"] / rows["900"]["chunked_peak_mb"]
    print(
        f"bootstrap memory growth 900 -> 14400 instances (16x): chunked {growth:.2f}x, "
        f"all-at-once {rows['14400']['unchunked_peak_mb'] / rows['900']['unchunked_peak_mb']:.2f}x"
    )
    return {"draws": draws, "chunk_elements": budget, "by_instances": rows, "chunked_growth_16x": growth}


def _human_export(frame: pd.DataFrame, path: Path) -> None:
    from omnieval.benchmarks.storybench._names import RUBRICS

    rng = np.random.default_rng(0)
    window = sorted(frame["instance_id"].unique())[:10]
    tasks = []
    for system in sorted(frame["system"].unique()):
        for iid in window:
            for track in RUBRICS:
                anns = [
                    {
                        "id": len(tasks) * 2 + k,
                        "completed_by": k,
                        "result": [
                            {"from_name": c, "type": "rating", "value": {"rating": int(rng.integers(4, 10))}}
                            for c in RUBRICS[track]
                        ],
                    }
                    for k in (1, 2)
                ]
                tasks.append(
                    {
                        "id": len(tasks),
                        "data": {"system": system, "instance_id": iid, "track": track},
                        "annotations": anns,
                    }
                )
    path.write_text(json.dumps(tasks))


def _bench_analyze(frame: pd.DataFrame) -> dict[str, Any]:
    from omnieval.scores import write_scores
    from omnieval_testkit.storybench_synthetic import panels

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        scores = root / "scores.parquet"
        write_scores(frame, scores)
        humans = root / "humans.json"
        _human_export(frame, humans)
        ids = sorted(frame["instance_id"].unique())
        dup = root / "clusters.json"
        dup.write_text(json.dumps([ids[i : i + 3] for i in range(0, 60, 3)]))
        cfg = root / "analysis.yaml"
        cfg.write_text(json.dumps({"panels": panels()}))
        cmd = [
            sys.executable, "-m", "omnieval", "analyze", str(scores), "--out", str(root / "out"),
            "--humans", str(humans), "--duplicates", str(dup), "--config", str(cfg),
        ]  # fmt: skip
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"omnieval analyze failed: {proc.stderr[-2000:]}")
        per = {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[1] in ("ok", "skipped") and parts[3] == "s":
                per[parts[0]] = {"status": parts[1], "seconds": float(parts[2])}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    skipped = [k for k, v in per.items() if v["status"] == "skipped"]
    print(
        f"omnieval analyze, paper-scale table, all {len(per)} analyses ({DRAWS} bootstrap resamples), "
        f"{cores} cores: {wall:.1f} s wall incl. start-up and reading the table"
        + (f"; skipped: {skipped}" if skipped else "")
    )
    return {"wall_s": wall, "cores": cores, "analyses": per}


def run() -> dict[str, Any]:
    """Run the three benchmarks, print one line each, and return the figures."""
    from omnieval_testkit.storybench_synthetic import make_scores

    frame = make_scores(n_systems=32, n_instances=900, dreamsim=True, seed=0, benchmark="storybench")
    return {
        "bootstrap": _bench_bootstrap(frame),
        "memory": _bench_memory(frame),
        "analyze": _bench_analyze(frame),
    }


if __name__ == "__main__":
    run()
