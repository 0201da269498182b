"""Human-vs-judge agreement from a Label Studio export, and agreement across judges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from omnieval.analysis import AnalysisConfig, run_analyses
from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval.benchmarks.storybench._analyses._human import read_label_studio
from omnieval.benchmarks.storybench._names import RUBRICS
from omnieval.benchmarks.storybench._table import build_table
from omnieval.errors import DataError
from omnieval_testkit.storybench_synthetic import make_scores, panels


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return make_scores(benchmark="storybench", n_systems=8, n_instances=30, seed=4)


def _export(
    frame: pd.DataFrame, window: list[str], tracks: tuple[str, ...], seed: int = 0
) -> list[dict[str, Any]]:
    """Two annotators per item, scoring around the judges' example mean, plus odd cases."""
    rng = np.random.default_rng(seed)
    table = build_table(frame)
    tasks = []
    tid = 0
    for s_idx, system in enumerate(table.systems):
        for iid in window:
            i = table.instances.index(iid)
            for track in tracks:
                base = (
                    np.nanmean(table.judges[track].example[s_idx, i])
                    if np.isfinite(table.judges[track].example[s_idx, i]).any()
                    else 5.0
                )
                anns = []
                for who in (1, 2):
                    result = [
                        {
                            "from_name": c,
                            "to_name": "item",
                            "type": "rating",
                            "value": {"rating": int(np.clip(round(base + rng.normal(0, 0.7)), 1, 10))},
                        }
                        for c in RUBRICS[track]
                    ]
                    result.append({"from_name": "comment", "type": "textarea", "value": {"text": ["ok"]}})
                    anns.append({"id": tid * 10 + who, "completed_by": {"id": who}, "result": result})
                tasks.append(
                    {
                        "id": tid,
                        "data": {
                            "system": system,
                            "instance_id": iid,
                            "track": "joint" if track == "integrated" else track,
                        },
                        "annotations": anns,
                    }
                )
                tid += 1
    tasks[0]["annotations"].append({"id": 99999, "completed_by": 3, "was_cancelled": True, "result": []})
    tasks[1]["annotations"].append(
        {
            "id": 99998,
            "completed_by": 3,
            "result": [{"from_name": RUBRICS[tracks[0]][0], "value": {"number": 7}}],
        }
    )
    return tasks


@pytest.fixture(scope="module")
def human_doc(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:  # type: ignore[type-arg]
    out = tmp_path_factory.mktemp("human")
    window = sorted(frame["instance_id"].unique())[:5]
    path = out / "export.json"
    path.write_text(json.dumps(_export(frame, window, ("text", "speech", "integrated"))))
    groups = {"top": ("sys00", "sys01", "sys02", "sys03"), "rest": ("sys04", "sys05", "sys06", "sys07")}
    run_analyses(
        frame, out / "a", only=["human_agreement"], config=AnalysisConfig(humans=path, system_groups=groups)
    )
    return json.loads((out / "a" / "human_agreement.json").read_text()), path


def test_label_studio_counts(human_doc) -> None:  # type: ignore[no-untyped-def]
    doc, path = human_doc
    ratings = read_label_studio(path)
    n_items = 8 * 5 * 3
    assert ratings.submitted == 2 * n_items + 2
    assert len(ratings.evaluations) == 2 * n_items
    assert ratings.skipped == 1 and ratings.incomplete == 1
    assert doc["counts"]["scored"] == 2 * n_items
    assert {e.track for e in ratings.evaluations} == {"text", "speech", "integrated"}


def test_human_vs_judge_correlations_match_scipy(frame: pd.DataFrame, human_doc) -> None:  # type: ignore[no-untyped-def]
    doc, path = human_doc
    ratings = read_label_studio(path)
    agg = aggregate(frame).to_dict()["systems"]
    systems = sorted(agg)
    for track in ("text", "speech", "integrated"):
        human = [
            np.mean(
                [
                    np.mean(list(e.scores.values()))
                    for e in ratings.evaluations
                    if e.system == s and e.track == track
                ]
            )
            for s in systems
        ]
        judge = [agg[s]["valid_only"][f"judge.{track}"] for s in systems]
        got = doc["agreement"][track]
        assert got["spearman"] == pytest.approx(stats.spearmanr(human, judge).statistic, abs=1e-12)
        assert got["kendall_tau_b"] == pytest.approx(stats.kendalltau(human, judge).statistic, abs=1e-12)
        assert got["pearson"] == pytest.approx(stats.pearsonr(human, judge).statistic, abs=1e-12)
        lo, hi = doc["leave_one_transition_out"][track]["spearman"]
        assert lo <= hi
    assert "composite" in doc["agreement"]
    assert set(doc["paradigm_tiers"]["order_human"]) == {"top", "rest"}


def test_krippendorff_per_criterion_matches_package(human_doc) -> None:  # type: ignore[no-untyped-def]
    import krippendorff as kd

    doc, path = human_doc
    ratings = read_label_studio(path)
    evs = [e for e in ratings.evaluations if e.track == "speech"]
    units = sorted({(e.system, e.instance_id) for e in evs})
    coders = sorted({e.annotator for e in evs})
    crit = RUBRICS["speech"][1]
    data = np.full((len(coders), len(units)), np.nan)
    for e in evs:
        data[coders.index(e.annotator), units.index((e.system, e.instance_id))] = e.scores[crit]
    ref = kd.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert doc["krippendorff_alpha_ordinal"]["speech"][crit] == pytest.approx(ref, abs=1e-10)
    lo, hi = doc["krippendorff_alpha_range"]["speech"]
    assert lo <= doc["krippendorff_alpha_ordinal"]["speech"][crit] <= hi


def test_bad_label_studio_export(tmp_path: Path, frame: pd.DataFrame) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            [
                {
                    "id": 1,
                    "data": {"system": "sys00", "instance_id": "x", "track": "text"},
                    "annotations": [{"result": [{"from_name": "overall", "value": {"rating": 5}}]}],
                }
            ]
        )
    )
    with pytest.raises(DataError, match="not a text criterion"):
        read_label_studio(bad)
    bad.write_text(
        json.dumps(
            [
                {
                    "id": 1,
                    "data": {"system": "sys00", "instance_id": "x", "track": "text"},
                    "annotations": [{"result": [{"from_name": RUBRICS["text"][0], "value": {"rating": 11}}]}],
                }
            ]
        )
    )
    with pytest.raises(DataError, match=r"1\.\.10"):
        read_label_studio(bad)


def test_inter_judge_agreement(frame: pd.DataFrame, tmp_path: Path) -> None:
    run_analyses(frame, tmp_path, only=["inter_judge"], config=AnalysisConfig(panels=panels()))
    doc = json.loads((tmp_path / "inter_judge.json").read_text())
    table = build_table(frame)
    jt = table.judges["speech"]
    pair = doc["tracks"]["speech"]["pairs"][0]
    assert pair["judges"] == [jt.judges[0], jt.judges[1]]
    a, b = jt.example[:, :, 0], jt.example[:, :, 1]
    joint = np.isfinite(a) & np.isfinite(b)
    assert pair["n_items"] == int(joint.sum())
    assert pair["item_mae"] == pytest.approx(np.abs(a[joint] - b[joint]).mean())
    assert pair["item_spearman"] == pytest.approx(stats.spearmanr(a[joint], b[joint]).statistic)
    ma, mb = np.nanmean(a, axis=1), np.nanmean(b, axis=1)
    assert pair["system_kendall_tau_b"] == pytest.approx(stats.kendalltau(ma, mb).statistic)
    cal = doc["tracks"]["speech"]["calibration"][jt.judges[2]]
    assert cal["between_system_sd"] == pytest.approx(np.std(np.nanmean(jt.example[:, :, 2], axis=1), ddof=1))
    comps = doc["panels"]["comparisons"]
    assert len(comps) == 6 and {c["score"] for c in comps} == {"composite", "total_average"}


def test_an_annotation_without_annotator_is_refused(frame: pd.DataFrame, tmp_path: Path) -> None:
    """Ratings with no ``completed_by`` would pool several people as one annotator."""
    tasks = _export(frame, sorted(frame["instance_id"].unique())[:1], ("text",))
    del tasks[0]["annotations"][1]["completed_by"]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    with pytest.raises(DataError, match=r"annotation \d+: field completed_by: no annotator"):
        read_label_studio(path)
