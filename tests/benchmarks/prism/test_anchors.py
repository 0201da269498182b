"""PRISM's drift anchors: a judge run in the drift check's shape, the shipped set and its pins."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from omnieval.benchmarks import JudgeJob
from omnieval.benchmarks.prism._anchors import anchor_lineage, anchor_rows
from omnieval.benchmarks.prism._tags import DIMENSIONS
from omnieval.judges._drift import compare_runs, judge_anchors, load_anchors

ROOT = Path(__file__).resolve().parents[3]
ANCHORS = ROOT / "data" / "anchors" / "prism"
TRACKS = dict.fromkeys(DIMENSIONS, ("video",))


def _call(system: str, stage: int, status: str = "ok", swapped: bool = False) -> dict[str, Any]:
    return {
        "system": system,
        "instance_id": "on-01",
        "index": 0,
        "stage": stage,
        "swapped": swapped,
        "judge": "j",
        "status": status,
        "note": "",
    }


def _cell(
    system: str, track: str, criterion: str, value: float, side: str = "ground_truth"
) -> dict[str, Any]:
    paired = side if side == "ground_truth" else system
    who = system if side == "ground_truth" else "ground_truth"
    return {
        "system": who,
        "instance_id": "on-01",
        "track": track,
        "judge": "j",
        "criterion": criterion,
        "value": value,
        "status": "ok",
        "paired_with": paired,
    }


def test_rows_hold_the_candidate_side_cells_per_dimension() -> None:
    calls = pd.DataFrame(
        [_call("a", 1), _call("a", 2), _call("a", 2, swapped=True), _call("b", 1, status="parse_error")]
    )
    cells = pd.DataFrame(
        [
            _cell("a", "av_coherence", "speech", 8.0),
            _cell("a", "av_coherence", "music", 4.0),
            _cell("a", "av_coherence", "speech", 10.0, side="reference"),  # the reference's side
            _cell("a", "audio_quality", "speech", 5.0),
            _cell("a", "expressiveness", "speech", 3.0),
            _cell("a", "prompt_following", "speech", 0.0),
        ]
    )
    rows = anchor_rows(cells, calls)
    got = {(r.system, r.track): (r.status, json.loads(r.scores)) for r in rows.itertuples()}
    assert got == {
        ("a", "av_coherence"): ("ok", {"speech": 8.0, "music": 4.0}),
        ("a", "audio_quality"): ("ok", {"speech": 5.0}),
        ("a", "expressiveness"): ("ok", {"speech": 3.0}),
        ("a", "prompt_following"): ("ok", {"speech": 0.0}),
        # an invalid call scores nothing on either of its dimensions
        ("b", "av_coherence"): ("parse_error", {}),
        ("b", "audio_quality"): ("parse_error", {}),
    }
    assert len(rows) == 6  # the swap-check call adds no row


def _lineage(stage_2: str = "p2", asr: str = "whisper-tiny.en", measured: int = 3) -> dict[str, Any]:
    return {
        "judge_kind": "cascade",
        "judges": {"j": {"model": "m", "revision": "r", "weights_sha256": {}, "roles": {"judge": {"t": 0}}}},
        "prompts": {"stage_1": {"sha256": "p1"}, "stage_2": {"sha256": stage_2}},
        "criteria": {"sha256": "c"},
        "seed": 0,
        "facts": {"version": 2, "asr_model": asr, "measured": measured},
    }


def test_lineage_is_per_dimension_and_leaves_out_run_counts() -> None:
    out = anchor_lineage(_lineage())
    assert {t: p["sha256"] for t, p in out["prompts"].items()} == {
        "av_coherence": "p1",
        "audio_quality": "p1",
        "expressiveness": "p2",
        "prompt_following": "p2",
    }
    roles = out["judges"]["j"]["roles"]
    assert roles["av_coherence"]["stage"] == 1 and roles["prompt_following"]["stage"] == 2
    assert roles["av_coherence"]["facts"] == {"version": 2, "asr_model": "whisper-tiny.en"}
    # How many clips had their facts measured this run is not a setting: same settings next run.
    assert anchor_lineage(_lineage(measured=0))["judges"] == out["judges"]


def _judged(stage_2: str = "p2", asr: str = "whisper-tiny.en", value: float = 8.0) -> Any:
    """A fake PRISM judge for :func:`judge_anchors`: one clip, every dimension scored ``value``."""

    def judge(instances: Any, candidates: Any, panel: str, cache_dir: Path, progress: Any) -> Any:
        systems = list(candidates)
        calls = pd.DataFrame([_call(s, st) for s in systems for st in (1, 2)])
        cells = pd.DataFrame([_cell(s, t, "speech", value) for s in systems for t in DIMENSIONS])
        return SimpleNamespace(
            judgments=anchor_rows(cells, calls),
            lineage=anchor_lineage(_lineage(stage_2, asr)),
            model_calls=len(calls),
            cache_hits=0,
            panel="cpu-cascade",
        )

    return judge


def _document(tmp_path: Path, **kwargs: Any) -> dict[str, Any]:
    folder = tmp_path / "anchors"
    if not folder.exists():
        (folder / "clip" / "video" / "0").mkdir(parents=True)
        entry = {
            "id": "a",
            "instance_id": "on-01",
            "index": 0,
            "tracks": list(DIMENSIONS),
            "candidate": "clip",
        }
        (folder / "manifest.json").write_text(json.dumps({"anchors": [entry]}))
    anchors = load_anchors(folder, TRACKS)
    instances = [SimpleNamespace(id="on-01", index=0)]
    run = judge_anchors(anchors, instances, panel="cpu-cascade", cache_dir=tmp_path, judge=_judged(**kwargs))
    assert run.model_calls == 2  # one clip, two stage calls, shared by its four anchors
    return {"judges": run.judges, "anchors": run.scores, "tracks": {a.id: a.track for a in anchors}}


def test_a_changed_stage_prompt_or_describer_names_its_dimensions(tmp_path: Path) -> None:
    pinned = _document(tmp_path)
    assert sorted(pinned["anchors"]) == [f"a.{d}" for d in sorted(DIMENSIONS)]
    assert compare_runs(_document(tmp_path), pinned, threshold=1.0)["status"] == "ok"
    prompt = compare_runs(_document(tmp_path, stage_2="p2-edited"), pinned, threshold=1.0)
    assert prompt["status"] == "identity_changed"
    assert "prompt template changed on track expressiveness, prompt_following" in prompt["reasons"][0]
    describer = compare_runs(_document(tmp_path, asr="whisper-base"), pinned, threshold=1.0)
    assert "settings_sha256 changed on track " + ", ".join(sorted(DIMENSIONS)) in describer["reasons"][0]
    shifted = compare_runs(_document(tmp_path, value=5.0), pinned, threshold=1.0)
    assert shifted["status"] == "drift"
    assert shifted["reasons"][0] == "track audio_quality: mean absolute shift 3.000 > threshold 1"


def test_the_shipped_anchors_load_and_every_one_is_pinned_with_a_valid_score() -> None:
    anchors = load_anchors(ANCHORS, TRACKS)
    assert len(anchors) == 4 * len(DIMENSIONS)
    assert {a.track for a in anchors} == set(DIMENSIONS)
    pinned = json.loads((ANCHORS / "pinned.json").read_text())
    assert pinned["panel"] == "cpu-cascade"
    (judge,) = pinned["judges"]
    assert set(pinned["judges"][judge]["prompt_sha256"]) == set(DIMENSIONS)
    for anchor in anchors:
        entry = pinned["anchors"][anchor.id][judge]
        assert entry["status"] == "ok" and entry["scores"], anchor.id
    assert pinned["tracks"] == {a.id: a.track for a in anchors}


def test_the_job_reaches_the_judge_with_every_anchor_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """The anchors are judged with no per-subset cap (the suite's max_per_subset cuts its systems only)."""
    from omnieval.benchmarks.prism import PrismMetricsConfig, _anchors
    from omnieval.config import load_suite

    seen: dict[str, Any] = {}

    def fake(instances: Any, candidates: Any, **kwargs: Any) -> Any:
        seen.update(instances=[i.id for i in instances], **kwargs)
        empty = pd.DataFrame(
            columns=["system", "instance_id", "index", "stage", "swapped", "judge", "status", "note"]
        )
        return SimpleNamespace(
            scores=pd.DataFrame(), judgments=empty, lineage={}, mlflow_tags={}, model_calls=0, cache_hits=0
        )

    monkeypatch.setattr("omnieval.benchmarks.prism._judge.judge_prism", fake)
    config = load_suite(ROOT / "pipelines" / "prism.yaml", check=False)
    assert isinstance(config.metrics, PrismMetricsConfig) and config.metrics.max_per_subset == 2
    instances = [SimpleNamespace(id=f"on-0{i}", index=i) for i in range(5)]
    job = JudgeJob(instances, {"a": Path("x")}, "cpu-cascade", config.metrics, Path("cache"))
    out = config.bench.judge_anchors(job)
    assert seen["instances"] == [f"on-0{i}" for i in range(5)] and seen["swap_check"] is False
    assert list(out.judgments.columns) == list(_anchors.ANCHOR_COLUMNS)
