"""A judge below its floor on the known set (health.json's meta_eval) in the comparison and verdict."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from omnieval.compare import compare_runs, read_run
from omnieval.compare._verdict import with_judge_checks
from omnieval.config import RegressionConfig

from .conftest import noisy_scores, storybench_scores

FAILURE = "judge cpu/j below its floor on the known set: track text accuracy 0.50 < 0.70 (12 pairs)"


def test_a_failed_judge_check_makes_judge_tests_unsafe_and_a_go_inconclusive(
    make_run: Callable[..., Path],
) -> None:
    before, after = noisy_scores()
    run_a, run_b = read_run(make_run("r1", before)), read_run(make_run("r2", after))
    config = RegressionConfig(bootstrap_draws=300)
    clean = compare_runs(run_a, run_b, config)
    assert clean["verdict"] == "GO"
    checked = compare_runs(run_a, run_b, config, judge_checks=[FAILURE])
    assert checked["verdict"] == "INCONCLUSIVE" and FAILURE in checked["reasons"]
    unsafe = {t["component"] for t in checked["tests"] if FAILURE in t["unsafe"]}
    # Components computed from judge rows become unsafe; the automatic metric stays trusted.
    assert unsafe == {"judge.text", "total_average"}, unsafe

    # A GO with nothing judge-based to compare (a first run) still turns INCONCLUSIVE, the failure first.
    first = with_judge_checks({"verdict": "GO", "reasons": ["no previous run to compare with"]}, [FAILURE])
    assert first["verdict"] == "INCONCLUSIVE" and first["reasons"] == [
        FAILURE,
        "no previous run to compare with",
    ]
    assert first["judge_checks"] == [FAILURE]
    go = with_judge_checks(clean, [FAILURE])
    assert go["verdict"] == "INCONCLUSIVE" and not any(r.startswith("GO:") for r in go["reasons"])
    assert with_judge_checks(clean, []) == clean


def test_a_trusted_regression_stays_no_go(make_run: Callable[..., Path]) -> None:
    worse = storybench_scores()
    worse.loc[(worse.system == "beta") & (worse.component == "bertscore_f1"), "value"] *= 0.3
    run_a, run_b = read_run(make_run("r1")), read_run(make_run("r2", worse))
    doc = compare_runs(run_a, run_b, RegressionConfig(bootstrap_draws=300), judge_checks=[FAILURE])
    doc = with_judge_checks(doc, [FAILURE])
    assert doc["verdict"] == "NO-GO"
    assert sum(FAILURE in r for r in doc["reasons"]) == 1, doc["reasons"]


def test_nightly_reads_the_run_folders_health(make_run: Callable[..., Path], tmp_path: Path) -> None:
    from omnieval.compare._nightly import _judge_checks

    folder = make_run("r1")
    assert _judge_checks(folder, None) == []
    health = {
        "meta_eval": {
            "below_floor": [{"judge": "cpu/j", "track": "text", "accuracy": 0.5, "floor": 0.7, "n_pairs": 12}]
        }
    }
    (folder / "health.json").write_text(json.dumps(health))
    assert _judge_checks(folder, None) == [FAILURE]
    (folder / "health.json").write_text("{not json")
    (reason,) = _judge_checks(folder, None)
    assert "unreadable" in reason
