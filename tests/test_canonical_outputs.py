"""Canonical outputs (issue 44): the scores tables DVC hashes have the same bytes on any CPU.

Floats computed with other SIMD kernels or another thread count differ in their last bits; every
value written to a scores table is rounded to its component's decimals (``omnieval.scores.PRECISION``,
docs/metrics.md "Canonical values"), so those differences vanish from the bytes. The slow test runs
the storybench metrics (BERTScore with the packaged MiniLM, image similarity) and a judge's
probability-weighted scores in two fresh processes, one thread with another CPU's kernels (AVX2
instead of AVX-512 where the machine has it) against two threads, and compares the files' bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from omnieval.benchmarks import BENCHMARKS
from omnieval.scores import (
    DEFAULT_PRECISION,
    PRECISION,
    SCORE_COLUMNS,
    ScoreRow,
    canonical,
    canonical_scores,
    precision,
    scores_frame,
    write_scores,
)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("storybench", "acbench", "prism")


def _rows(values: list[float], component: str) -> list[ScoreRow]:
    return [
        ScoreRow("storybench", "sys", f"i{i}", i, "text", component, "", "value", v, "ok")
        for i, v in enumerate(values)
    ]


def _noisy(values: np.ndarray, rng: np.random.Generator, size: float) -> np.ndarray:
    """``values`` moved by up to ``size`` (relative) and a few units in the last place."""
    moved = values * (1.0 + rng.uniform(-size, size, values.shape))
    return np.nextafter(moved, np.where(rng.random(values.shape) < 0.5, -np.inf, np.inf))


def test_last_bit_differences_give_the_same_bytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(44)
    for component, lo, hi in (("bertscore_f1", -1.0, 1.0), ("judge_expected", 1.0, 10.0), ("wer", 0.0, 1.0)):
        grid = 10.0 ** -precision(component)
        # Values a safe distance from a rounding boundary (at least 1 % of the grid away), as the
        # measured noise (1e-8 to 5e-8 on a cosine) is from the 4-decimal grid.
        base = np.round(rng.uniform(lo, hi, 500) / grid) * grid + rng.uniform(-0.49, 0.49, 500) * grid
        other = _noisy(base, rng, 1e-12)
        assert (other != base).all()
        a, b = tmp_path / f"{component}.a.parquet", tmp_path / f"{component}.b.parquet"
        write_scores(scores_frame(_rows(base.tolist(), component)), a)
        write_scores(scores_frame(_rows(other.tolist(), component)), b)
        assert hashlib.sha256(a.read_bytes()).hexdigest() == hashlib.sha256(b.read_bytes()).hexdigest()
        # Within half a unit of the last decimal kept, never more.
        back = pd.read_parquet(a)["value"].to_numpy()
        assert np.abs(back - base).max() <= grid / 2 + 1e-15


def test_rounding_rule() -> None:
    assert canonical(0.12345650000000001, "bertscore_f1") == 0.1235
    assert canonical(0.77765, "bertscore_f1") == np.round(0.77765, 4)  # half to even on the grid
    assert canonical(8.67687205208579, "judge_expected") == 8.6769
    assert canonical(1.0 / 3.0, "wer") == 0.333333333
    assert canonical(4.0 / 13.0, "token_f1") == 0.307692  # DEFAULT_PRECISION
    assert canonical(7.0, "judge") == 7.0 and canonical(148.0, "narration_length") == 148.0
    # A value within noise of zero keeps no sign bit: -0.0 and 0.0 differ in bytes.
    zero = canonical(-1e-9, "image_similarity")
    assert zero == 0.0 and np.signbit(zero) == np.False_
    assert np.isnan(canonical(float("nan"), "bertscore_f1"))
    assert precision("token_f1") == DEFAULT_PRECISION  # a component from outside the package


def test_table_rounding_matches_the_scalar_rule_and_is_idempotent() -> None:
    rng = np.random.default_rng(0)
    components = ["bertscore_f1", "judge_expected", "wpm", "speech_meta", "judge"]
    rows = [
        ScoreRow("acbench", "s", f"i{i}", i, "t", components[i % 5], "", "value", float(v), "ok")
        for i, v in enumerate(rng.uniform(-1.0, 300.0, 200))
    ]
    rows.append(ScoreRow("acbench", "s", "m", 999, "t", "wer", "", "value", None, "missing_output"))
    frame = scores_frame(rows)
    expected = [canonical(r.value, r.component) if r.value is not None else None for r in rows]
    assert [None if np.isnan(v) else v for v in frame["value"]] == expected
    again = canonical_scores(frame)
    assert again["value"].equals(frame["value"]) and list(again.columns) == list(SCORE_COLUMNS)
    assert not np.signbit(canonical_scores(frame.assign(value=-0.0))["value"]).any()


def test_precision_table_covers_every_shipped_component() -> None:
    declared: set[str] = set()
    for name in SHIPPED:
        components = set(BENCHMARKS.get(name).score_range)
        assert components, name
        missing = sorted(components - set(PRECISION))
        assert not missing, f"{name}: no decimals in omnieval.scores.PRECISION for {missing}"
        declared |= components
    assert sorted(set(PRECISION) - declared) == [], "PRECISION names a component no benchmark writes"
    assert all(isinstance(n, int) and 0 <= n <= 12 for n in PRECISION.values())


# -- the two processes ------------------------------------------------------------------------------


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def _other_cpu() -> dict[str, str]:
    """Environment that makes torch, MKL, oneDNN, OpenBLAS and NumPy take another CPU's kernels."""
    env: dict[str, str] = {}
    flags = _cpu_flags()
    if "avx2" in flags:
        env |= {
            "ATEN_CPU_CAPABILITY": "avx2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "ONEDNN_MAX_CPU_ISA": "AVX2",
            "OPENBLAS_CORETYPE": "Haswell",
        }
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    avx512 = [f for f in __cpu_dispatch__ if f.startswith(("AVX512", "X86_V4")) and __cpu_features__.get(f)]
    if avx512:
        env["NPY_DISABLE_CPU_FEATURES"] = ",".join(avx512)
    return env


def _run_child(out: Path, threads: int, extra: dict[str, str]) -> dict[str, object]:
    env = {
        **os.environ,
        **extra,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
        "OMNIEVAL_LLAMACPP_MAX_THREADS": str(threads),
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src"), str(ROOT / "tests" / "judges"), str(ROOT), os.environ.get("PYTHONPATH", "")]
        ),
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "canonical_child.py"), str(out), str(threads)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    raw: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return raw


@pytest.mark.slow
def test_metrics_and_judge_tables_are_byte_identical_across_threads_and_kernels(tmp_path: Path) -> None:
    one = _run_child(tmp_path / "one", 1, _other_cpu())
    two = _run_child(tmp_path / "two", 2, {})
    names = ("metrics.parquet", "judge_scores.parquet", "judgments.parquet")
    for name in names:
        a, b = (tmp_path / "one" / name).read_bytes(), (tmp_path / "two" / name).read_bytes()
        assert a == b, f"{name} differs between the two processes"
    metrics = pd.read_parquet(tmp_path / "one" / "metrics.parquet")
    ok = metrics[metrics["status"] == "ok"]
    assert {"bertscore_f1", "image_similarity"} <= set(ok["component"])
    judged = pd.read_parquet(tmp_path / "one" / "judge_scores.parquet")
    assert (judged["component"] == "judge_expected").sum() > 0
    # What the rounding absorbed: the unrounded values, by key, as each process computed them.
    raw_one, raw_two = one["raw"], two["raw"]
    assert isinstance(raw_one, dict) and isinstance(raw_two, dict) and raw_one.keys() == raw_two.keys()
    moved = {k: (raw_one[k], raw_two[k]) for k in raw_one if raw_one[k] != raw_two[k]}
    grids = {k: 10.0 ** -precision(k.split("|")[0]) for k in raw_one}
    for key, (x, y) in moved.items():
        assert abs(x - y) < grids[key] / 100, f"{key}: {x} vs {y} is more than last-bit noise"
    print(f"unrounded values that differed between the processes: {len(moved)} of {len(raw_one)}")
