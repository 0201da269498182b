"""Pins of the known-set results as they were before the benchmarks' known-set judging became one
function (issue 41): the full check documents, the per-pair verdicts, health.json's ``meta_eval``
block, the report block and the MLflow metrics, each as the SHA-256 of its JSON (or HTML), for
storybench and PRISM. The digests were computed at commit 8358e66 (before the refactor) and must
not move.

Two kinds of judging are pinned: the scripted storybench judges as they really run (through the
judges' runner, no fake), and recorded judge outputs (the runners replaced by tables of scores with
every status the verdicts tell apart: valued, parse errors, not applicable, missing records,
non-finite scores, probability-weighted scores, graded lists, per-track judge sets).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import known_scripts
import pandas as pd
import pytest

from omnieval.benchmarks import get_benchmark
from omnieval.judges import check_known_set, merge_meta_eval, meta_eval_metrics
from omnieval.metrics import MetricsConfig
from omnieval.reporting import known_set_block

STORY_KNOWN = Path(__file__).resolve().parents[2] / "src/omnieval/benchmarks/storybench/known_set.json"
PRISM_SAMPLE = Path(__file__).resolve().parents[2] / "data" / "prism-sample"
PRISM_KNOWN = Path(__file__).resolve().parents[2] / "src/omnieval/benchmarks/prism/known_set.json"


def _steady(value: Any) -> Any:
    """``value`` with wall-clock figures (usage seconds, the cache file's creation time) blanked."""
    if isinstance(value, dict):
        return {k: None if k in ("seconds", "created") else _steady(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _sha(value: Any) -> str:
    # Key order is part of what is pinned (health.json and the report keep insertion order).
    text = json.dumps(_steady(value), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _digests(doc: dict[str, Any], cache: Path, panel: str) -> dict[str, str]:
    """The pinned views of one check: document, per-pair verdicts (from the result cache), health.json
    section, report block, MLflow metrics and tags."""
    (cached,) = (json.loads(p.read_text()) for p in (cache / "meta_eval").glob("*.json"))
    health = merge_meta_eval({"judges": {}}, {panel: doc})

    metrics, tags = meta_eval_metrics(health)
    out = {
        "document": _sha(doc),
        "verdicts": _sha(cached["verdicts"]),
        "cached": _sha({k: v for k, v in cached.items() if k not in ("panel",)}),
        "health": _sha(health),
        "report": hashlib.sha256(known_set_block(health["meta_eval"]).encode()).hexdigest(),
        "mlflow": _sha([sorted(metrics.items()), sorted(tags.items())]),
    }
    return out


# -- storybench, scripted judges through the real runner ---------------------------------------------


@pytest.fixture(scope="module")
def transitions(sample_root: Path) -> tuple[Any, ...]:
    bench = get_benchmark("storybench")
    return bench.instances(bench.load(sample_root))


SCRIPTED = {
    "prefers_ground_truth": {
        "document": "da62955e44f841e82c1337c8f91921b57b588302bcf0c76d8e227563cdb27ad0",
        "verdicts": "fd2d81af60e34dcbd919a46fa3380c3e8780a50fc9d2e0ccb30956fbb86b82ef",
        "cached": "26e797b25a5584b13f47d6d7ec20659b5de08da1523b6bc887aaf4cf74d4df24",
        "health": "5651b35c66122d1d3dcf599a0cfc72f83270501f3fe7b954952a5d4337865c39",
        "report": "1060759e1b3137a6c298f00956f435cfe2eb70de3d44d25884d973622aba9f11",
        "mlflow": "84011da21b79e42032e7aa62575e1875ad7d65042f9f6ad639184209e3d6dbd2",
    },
    "constant": {
        "document": "62ded844d11b3b93155dcbe8c634ff77b8a62974cd3ccd222f6c4c4fe90762dc",
        "verdicts": "fc7aa34cbccdbf0f16795dc7e72f3bac7df3da596918ae754331c3d3c0358b67",
        "cached": "212328eba026b0d8e378bed07cde22fea0feaa70bb567a8dd4864ca63a21c225",
        "health": "57c2b2b480757254b7796661db621e146b3f575716c711e8c1f8a39446d29c55",
        "report": "cd1d04f45d06c7b0c511ab8bdcdc5dacee02e8bfce7c6b372c7184d39c367467",
        "mlflow": "a865bf2e01d422e11ae3b1693c78ae1a999d5f8efd79dfb476b1d2fe2e499769",
    },
}


@pytest.mark.parametrize("script", sorted(SCRIPTED))
def test_storybench_scripted_results_are_pinned(
    tmp_path: Path, transitions: tuple[Any, ...], script: str
) -> None:
    panel = known_scripts.write_panel(tmp_path, script)
    runner = get_benchmark("storybench").known_set(transitions, MetricsConfig())
    doc = check_known_set(runner, panel, cache_dir=tmp_path / "cache")
    doc["panel"] = Path(panel).name  # the panel's path is the test's temporary folder
    assert _digests(doc, tmp_path / "cache", "p") == SCRIPTED[script]


# -- recorded judge outputs --------------------------------------------------------------------------


def _score(*parts: str) -> float:
    """A seeded score in [1, 10] from ``parts`` (stands in for a judge's answer)."""
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return float(1 + digest[0] % 10)


STORY_PANEL = """\
name: recorded
tracks:
{tracks}
"""
STORY_TRACK = """\
  {track}:
    judges:
      - id: {judge}
        model: scripted/{judge}
        backend: {{kind: scripted, script: "known_scripts:constant"}}
        decoding: {{temperature: 0.0, max_tokens: 128}}
        framing: {{schema_constrained: true}}
        retries: 0
"""
# Judges per track: j-a on text and integrated, j-b on text and speech, j-c (never runnable) on image.
STORY_JUDGES = {"text": ("j-b", "j-a"), "speech": ("j-b",), "image": ("j-c",), "integrated": ("j-a",)}


def _recorded_run_judges(items: Any, systems: Any, *, panel: str, **_: Any) -> Any:
    """Storybench's judge runner replaced by recorded outputs (see :data:`STORY_JUDGES`)."""
    track = next(iter(systems)).split(".", 1)[0]
    rows = []
    for judge in STORY_JUDGES[track]:
        for system in systems:
            variant = system.split(".", 1)[1]
            for item in items:
                key = (judge, item.id, system)
                roll = _score(*key, "status")
                status, scores, expected, note = (
                    "ok",
                    {"a": _score(*key, "a"), "b": _score(*key, "b")},
                    {},
                    "",
                )
                if judge == "j-c":
                    status, scores, note = "not_applicable", {}, "" if item.index % 2 else "no vision model"
                elif roll <= 2:
                    status, scores, note = "parse_error", {}, "not JSON"
                elif roll == 3 and variant != "ground_truth":
                    continue  # no record at all for this variant
                elif roll == 4:
                    scores = {"a": math.nan, "b": 5.0}
                elif roll == 5:
                    status = "repaired"
                if judge == "j-a" and status in ("ok", "repaired"):
                    expected = {k: v - 0.25 * _score(*key, "e", k) / 10 for k, v in scores.items()}
                rows.append(
                    {
                        "judge": judge,
                        "system": system,
                        "instance_id": item.id,
                        "track": track,
                        "status": status,
                        "scores": json.dumps(scores) if scores else "",
                        "expected_scores": json.dumps(expected) if expected else "",
                        "note": note,
                    }
                )
    frame = pd.DataFrame(rows)
    judges = {j: {"model": f"m-{j}", "revision": "r1"} for j in STORY_JUDGES[track]}
    usage = {
        j: {"calls": len(rows), "cached_calls": 1, "prompt_tokens": None, "seconds": 0.5} for j in judges
    }
    return SimpleNamespace(
        judgments=frame, lineage={"judges": judges, "usage": usage}, model_calls=len(rows), cache_hits=1
    )


def _graded_story(tmp_path: Path) -> Path:
    """The shipped storybench set plus a graded text item (ground truth, a renamed character, a
    shuffled narration: three ranks)."""
    shipped = json.loads(STORY_KNOWN.read_text(encoding="utf-8"))
    first = shipped["items"][0]
    graded = {
        **first,
        "id": "text-graded",
        "instance_id": shipped["items"][1]["instance_id"],
        "variants": [
            {**first["variants"][0]},
            {"id": "wrong_name", "rank": 1, "derive": "wrong_name", "params": {"names": {"x": "y"}}},
            {"id": "shuffled_words", "rank": 2, "derive": "shuffled_words", "params": {"seed": 3}},
        ],
    }
    path = tmp_path / "story_known.json"
    path.write_text(json.dumps({**shipped, "items": [*shipped["items"], graded]}), encoding="utf-8")
    return path


RECORDED_STORY = {
    "document": "34b71b744ec79fe96792f73d0044759b1b7b1ee4a4114d5a76fa69d0f699f87e",
    "verdicts": "859c291eb1911a6d1969a2561c6ca5fb9dd47b625dcb1e29f967314c1c018b42",
    "cached": "c4968b6fece61cf5652b118cdd67fe821c9c76ab994491297f83dad3d2c936f4",
    "health": "e5e5298cdccc55c2692ae2cc42b4446d4efd5f79d56e1641b7500e8ee83352e2",
    "report": "c767001948af9e23189ac6edd0b4a58e250d2399975a92a9dcdec425ef2045e4",
    "mlflow": "9078eb76017d964cb0de0aaf2cfa679d7d9395dd6dbc2ed5021c22ef56567a96",
}


def test_storybench_recorded_results_are_pinned(
    tmp_path: Path, transitions: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnieval.benchmarks.storybench._known import StorybenchKnownSet

    monkeypatch.setattr("omnieval.judges.run_judges", _recorded_run_judges)
    tracks = "".join(STORY_TRACK.format(track=t, judge=j) for t, js in STORY_JUDGES.items() for j in js)
    panel = tmp_path / "recorded.yaml"
    panel.write_text(STORY_PANEL.format(tracks=tracks), encoding="utf-8")
    runner = StorybenchKnownSet(transitions, lambda _: {}, source=_graded_story(tmp_path))
    # Building espeak-ng speech and images is the builders' business (pinned by their own tests).
    names = [f"{i.id}/{v.id}" for i in runner.manifest.items for v in i.variants]
    runner.build = lambda folder, tracks: {n: hashlib.sha256(n.encode()).hexdigest() for n in names}  # type: ignore[method-assign]
    runner.identity = lambda panel: {"panel": "recorded"}  # type: ignore[method-assign]
    doc = check_known_set(runner, str(panel), cache_dir=tmp_path / "cache")
    doc["panel"] = "recorded"
    assert _digests(doc, tmp_path / "cache", "cpu") == RECORDED_STORY


PRISM_JUDGES = ("p-b", "p-a", "p-na")


def _recorded_judge_prism(instances: Any, candidates: Any, **_: Any) -> Any:
    """PRISM's judge runner replaced by recorded blind pairs: per (judge, damaged clip, instance) one
    call whose rows hold the clip's cells and the reference's cells of that same call."""
    from omnieval.benchmarks.prism._judge import JUDGMENT_COLUMNS, PrismJudgeResult
    from omnieval.benchmarks.prism._tags import GROUND_TRUTH, STAGE_DIMENSIONS, stage_cells

    rows = []
    judgments = []
    for judge in PRISM_JUDGES:
        for system in candidates:
            for inst in instances:
                key = (judge, system, inst.id)
                roll = _score(*key, "status")
                if judge == "p-b" and roll == 1:
                    continue  # this call never happened
                status, note = "ok", ""
                if judge == "p-na":
                    status, note = "not_applicable", "unavailable: a VLM (no GPU)" if roll % 2 else ""
                elif roll == 2:
                    status, note = "parse_error", "not JSON"
                elif roll == 3:
                    status, note = "unrecoverable", ""
                for stage in STAGE_DIMENSIONS:
                    for n, cell in enumerate(stage_cells(inst.active_tags, stage)):
                        for who in (system, GROUND_TRUTH):
                            value: float | None = _score(*key, who, cell.dimension, str(n))
                            cell_status = status
                            if status != "ok" or (roll == 4 and who == system and n == 0):
                                value, cell_status = None, status if status != "ok" else "parse_error"
                            rows.append(
                                {
                                    "benchmark": "prism",
                                    "system": who,
                                    "instance_id": inst.id,
                                    "index": inst.index,
                                    "track": cell.dimension,
                                    "component": "judge",
                                    "judge": judge,
                                    "criterion": cell.audio_type,
                                    "value": value,
                                    "status": cell_status,
                                    "panel": "recorded",
                                    "condition": "",
                                    "subset": inst.subset,
                                    "paired_with": GROUND_TRUTH if who == system else system,
                                }
                            )
                judgments.append({"judge": judge, "system": system, "instance_id": inst.id, "note": note})
    frame = pd.DataFrame(judgments).reindex(columns=list(JUDGMENT_COLUMNS))
    lineage = {
        "judges": {j: {"model": f"m-{j}", "revision": "r"} for j in PRISM_JUDGES},
        "usage": {
            j: {"calls": 3, "cached_calls": 0, "prompt_tokens": 10, "seconds": 1.25} for j in PRISM_JUDGES
        },
    }
    return PrismJudgeResult(pd.DataFrame(rows), frame, lineage, {}, 11, 2, None, [])


def _graded_prism(tmp_path: Path) -> Path:
    """The shipped PRISM set plus a graded item (ground truth, a frozen picture, a silent track)."""
    shipped = json.loads(PRISM_KNOWN.read_text(encoding="utf-8"))
    first = shipped["items"][0]
    variants = {v["id"]: v for v in first["variants"]}
    graded = {
        **first,
        "id": "graded",
        "instance_id": shipped["items"][1]["instance_id"],
        "tracks": ["av_coherence", "audio_quality"],
        "variants": [
            variants["ground_truth"],
            {**variants["frozen_video"], "rank": 1, "tracks": None},
            {**variants["muted"], "rank": 2},
        ],
    }
    path = tmp_path / "prism_known.json"
    path.write_text(json.dumps({**shipped, "items": [*shipped["items"], graded]}), encoding="utf-8")
    return path


RECORDED_PRISM = {
    "document": "79f805861cabd209c504322c059ad761297cb69faaf81e450ca9fbf3035baf78",
    "verdicts": "ced1d2d75fd19eddc50c8775c5bbaed23f7a0a2c6bf06f73f57c59b6601aeb8d",
    "cached": "3a00aa48dcc321395fa409d68592a445377c660073a310bef2696c51b4d6a6d7",
    "health": "de237389d09a666e195a17ee7739490777cbbac7543231ca128cf490d1bc2a60",
    "report": "5b7d77795320b3085602b44ce02a05953a991cb86a6d522ba88635c922b211a5",
    "mlflow": "63d1d789d43dd8fe476c29783ccd88eb49074122fcbe8ffbdcd0bb40bc9bd88a",
}


def test_prism_recorded_results_are_pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omnieval.benchmarks.prism._known import PrismKnownSet

    monkeypatch.setattr("omnieval.benchmarks.prism._judge.judge_prism", _recorded_judge_prism)
    bench = get_benchmark("prism")
    instances = list(bench.instances(bench.load(PRISM_SAMPLE)))
    runner = PrismKnownSet(instances, source=_graded_prism(tmp_path))
    names = [f"{i.id}/{v.id}" for i in runner.manifest.items for v in i.variants]
    runner.build = lambda folder, tracks: {n: hashlib.sha256(n.encode()).hexdigest() for n in names}  # type: ignore[method-assign]
    runner.identity = lambda panel: {"panel": "recorded"}  # type: ignore[method-assign]
    doc = check_known_set(runner, "cpu-cascade", cache_dir=tmp_path / "cache")
    assert _digests(doc, tmp_path / "cache", "cpu-cascade") == RECORDED_PRISM
