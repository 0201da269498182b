"""PRISM's known set: damaged copies built from the reference clips (silent track, another clip's
audio, a frozen picture) as pinned, and each blind pair's scores mapped to known pairs per dimension."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from omnieval.benchmarks import get_benchmark
from omnieval.benchmarks.prism._judge import JUDGMENT_COLUMNS, PrismJudgeResult
from omnieval.benchmarks.prism._known import KNOWN_SET, PrismKnownSet
from omnieval.benchmarks.prism._media import decode_audio, extract_frames
from omnieval.benchmarks.prism._tags import GROUND_TRUTH, STAGE_DIMENSIONS, stage_cells
from omnieval.judges import check_known_set, load_known_set

from .conftest import SAMPLE


@pytest.fixture(scope="module")
def instances(prism_sample: Path) -> list[Any]:
    bench = get_benchmark("prism")
    return list(bench.instances(bench.load(prism_sample)))


def _one_item(tmp_path: Path) -> Path:
    """The shipped set's first item (on-01: speech on screen) as a manifest of its own."""
    shipped = json.loads(KNOWN_SET.read_text(encoding="utf-8"))
    path = tmp_path / "known.json"
    path.write_text(json.dumps({**shipped, "items": shipped["items"][:1]}), encoding="utf-8")
    return path


def test_damaged_clips_are_built_as_pinned(tmp_path: Path, instances: list[Any], prism_sample: Path) -> None:
    runner = PrismKnownSet(instances, source=_one_item(tmp_path))
    assert runner.panel_tracks("cpu-cascade") == dict.fromkeys(
        ["av_coherence", "audio_quality", "expressiveness", "prompt_following"]
    )
    built = runner.build(tmp_path / "built", runner.manifest.tracks())
    item = runner.manifest.items[0]
    assert set(built) == {f"{item.id}/{v.id}" for v in item.variants}
    if prism_sample == SAMPLE:  # the committed sample: bit-exact ffmpeg writes give the pinned bytes
        assert built == {f"{item.id}/{v.id}": v.sha256 for v in item.variants}
    reference = next(i for i in instances if i.id == item.instance_id).reference_video
    clip = tmp_path / "built" / "{}" / "video" / "0" / "generated.mp4"
    muted = decode_audio(str(clip).format("muted"))
    assert muted.size and not np.any(muted)
    own = decode_audio(reference)
    swapped = decode_audio(str(clip).format("swapped_audio"))
    assert swapped.size == pytest.approx(own.size, rel=0.02) and not np.allclose(
        swapped[: own.size], own[: swapped.size]
    )
    first, last = extract_frames(str(clip).format("frozen_video"), times_s=[0.0, 1.5])
    moving = extract_frames(reference, times_s=[0.0, 1.5])

    def change(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.abs(a.astype(float) - b.astype(float)).mean())

    # A held frame (H.264 re-encodes it, so a little noise) against the reference's own motion.
    assert change(first, last) < 0.25 * change(*moving), (change(first, last), change(*moving))


def _fake_judge_prism(instances: Any, candidates: Any, **_: Any) -> PrismJudgeResult:
    """Not a model: the reference scores 8 in every cell; damaged clips 2, except the frozen picture
    (8, a tie: the judge misses a frozen picture)."""
    rows = []
    judgments = []
    for system in candidates:
        for inst in instances:
            for stage in STAGE_DIMENSIONS:
                for cell in stage_cells(inst.active_tags, stage):
                    for who, value in (
                        (system, 8.0 if system == "frozen_video" else 2.0),
                        (GROUND_TRUTH, 8.0),
                    ):
                        rows.append(
                            {
                                "benchmark": "prism",
                                "system": who,
                                "instance_id": inst.id,
                                "index": inst.index,
                                "track": cell.dimension,
                                "component": "judge",
                                "judge": "fake",
                                "criterion": cell.audio_type,
                                "value": value,
                                "status": "ok",
                                "panel": "fake",
                                "condition": "",
                                "subset": inst.subset,
                                "paired_with": GROUND_TRUTH if who == system else system,
                            }
                        )
                judgments.append({"judge": "fake", "system": system, "instance_id": inst.id, "note": ""})
    frame = pd.DataFrame(judgments).reindex(columns=list(JUDGMENT_COLUMNS))
    lineage = {"judges": {"fake": {"model": "none"}}, "usage": {}}
    return PrismJudgeResult(pd.DataFrame(rows), frame, lineage, {}, 6, 0, None, [])


def test_blind_pairs_become_known_pairs_per_dimension(
    tmp_path: Path, instances: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("omnieval.benchmarks.prism._judge.judge_prism", _fake_judge_prism)
    runner = PrismKnownSet(instances, source=_one_item(tmp_path))
    doc = check_known_set(runner, "cpu-cascade", cache_dir=tmp_path / "cache")
    figures = {t: (e["n_pairs"], e["correct"], e["ties"]) for t, e in doc["judges"]["fake"].items()}
    # muted counts on every dimension, the swapped soundtrack on AV coherence, expressiveness and
    # prompt following, the frozen picture on AV coherence only (where the fake judge ties it).
    assert figures == {
        "av_coherence": (3, 2, 1),
        "audio_quality": (1, 1, 0),
        "expressiveness": (2, 2, 0),
        "prompt_following": (2, 2, 0),
    }
    assert doc["below_floor"] == [
        {
            "judge": "fake",
            "track": "av_coherence",
            "accuracy": pytest.approx(2 / 3),
            "floor": 0.7,
            "n_pairs": 3,
        }
    ]
    assert doc["judges"]["fake"]["av_coherence"]["by_variant"]["frozen_video"]["accuracy"] == 0.0


def test_shipped_manifest_is_valid_and_names_sample_instances(instances: list[Any]) -> None:
    manifest = load_known_set(KNOWN_SET)
    assert manifest.benchmark == "prism" and len(manifest.known_pairs()) == 3 * (4 + 3 + 1)
    assert manifest.items and all(i.variants for i in manifest.items)
    assert all(v.sha256 for i in manifest.items for v in i.variants)
    PrismKnownSet(instances)  # every item and donor is in the sample
