"""The stratified pair sampler for the human study: the paper's 4 items per (subset, valid tag
combination), deterministic with a seed, and tasks the two-stage export reader takes back."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omnieval.benchmarks.prism._compose import pair_order
from omnieval.benchmarks.prism._human import apply_key, parse_two_stage_export
from omnieval.benchmarks.prism._human_sample import PAIRS_PER_COMBINATION, stratified_pairs
from omnieval.benchmarks.prism._tags import SUBSETS, TAGS, active_cells, valid_tag_sets
from omnieval.errors import DataError


@dataclass(frozen=True)
class Item:
    id: str
    index: int
    subset: str
    active_tags: tuple[str, ...]
    caption: str
    reference_video: Path


def _dataset(per_stratum: int, *, short: dict[str, int] | None = None) -> list[Item]:
    """``per_stratum`` items of every valid combination (``short``: fewer for some strata)."""
    items: list[Item] = []
    for subset in SUBSETS:
        for tags in sorted(valid_tag_sets(subset), key=lambda t: sorted(t)):
            ordered = tuple(t for t in TAGS if t in tags)
            key = f"{subset}:{','.join(ordered)}"
            for k in range((short or {}).get(key, per_stratum)):
                iid = f"{subset}-{'-'.join(ordered)}-{k:02d}"
                items.append(
                    Item(iid, len(items), subset, ordered, f"caption {iid}", Path(f"/refs/{iid}.mp4"))
                )
    return items


def test_paper_quota_per_combination() -> None:
    sample = stratified_pairs(_dataset(9), ["sora-2", "ltx-2", "ovi"], seed=3)
    assert PAIRS_PER_COMBINATION == 4
    per_subset = Counter(key.split(":")[0] for key, ids in sample.items.items() for _ in ids)
    # 7 + 7 + 15 valid combinations, four items each (the paper's 28, 28 and 60).
    assert per_subset == {"on_screen": 28, "off_screen": 28, "mixed": 60}
    assert sample.shortfall == {}
    tasks = sample.tasks()
    assert len(tasks) == 116 * 3
    assert [t["data"]["num"] for t in tasks] == list(range(1, 116 * 3 + 1))
    # Every sampled item is compared for every system, and each task's tags are its stratum's.
    pairs = Counter((p.instance_id, p.system) for p in sample.pairs)
    assert set(pairs.values()) == {1} and len({iid for iid, _ in pairs}) == 116
    for task in tasks:
        data = task["data"]
        assert data["instance_id"] in sample.items[f"{data['subset']}:{data['tags']}"]


def test_deterministic_and_stratum_independent() -> None:
    data = _dataset(9)
    first = stratified_pairs(data, ["a", "b"], seed=1)
    assert stratified_pairs(list(reversed(data)), ["a", "b"], seed=1) == first
    other = stratified_pairs(data, ["a", "b"], seed=2)
    assert other.items != first.items
    # More items of one combination change that combination's draw only.
    grown = stratified_pairs(_dataset(9, short={"mixed:SPEECH_A,MUSIC_B": 20}), ["a", "b"], seed=1)
    changed = {k for k in first.items if grown.items[k] != first.items[k]}
    assert changed <= {"mixed:SPEECH_A,MUSIC_B"}


def test_short_strata_are_reported_not_padded() -> None:
    sample = stratified_pairs(_dataset(9, short={"on_screen:SOUND_A": 1, "off_screen:MUSIC_B": 0}), ["a"])
    assert sample.shortfall == {"on_screen:SOUND_A": 3, "off_screen:MUSIC_B": 4}
    assert len(sample.items["on_screen:SOUND_A"]) == 1 and sample.items["off_screen:MUSIC_B"] == ()
    assert len(sample.pairs) == 116 - 3 - 4


def _clips(folder: Path, items: list[Item]) -> Path:
    """``folder`` holding an (empty) candidate clip for every item."""
    for item in items:
        clip = folder / "video" / str(item.index) / "generated.mp4"
        clip.parent.mkdir(parents=True, exist_ok=True)
        clip.touch()
    return folder


def test_blind_order_and_clips_follow_the_judge(tmp_path: Path) -> None:
    items = _dataset(2)
    sample = stratified_pairs(
        items,
        ["a", "b"],
        seed=5,
        per_combination=1,
        candidates={"a": _clips(tmp_path / "a", items), "b": _clips(tmp_path / "b", items)},
    )
    key = sample.key()["tasks"]
    orders = Counter(entry["order"] for entry in key.values())
    assert set(orders) == {"gt_first", "system_first"}
    for task in sample.tasks():
        data = task["data"]
        # Blind: which system and which clip is the ground truth are in the key only.
        assert "system" not in data and "order" not in data
        entry = key[str(data["num"])]
        assert entry["instance_id"] == data["instance_id"]
        order = pair_order(5, entry["system"], data["instance_id"])
        reference = f"/refs/{data['instance_id']}.mp4"
        index = next(i.index for i in _dataset(2) if i.id == data["instance_id"])
        candidate = (tmp_path / entry["system"] / "video" / str(index) / "generated.mp4").as_posix()
        if order.first == "reference":
            assert (entry["order"], data["video1"], data["video2"]) == ("gt_first", reference, candidate)
        else:
            assert (entry["order"], data["video1"], data["video2"]) == ("system_first", candidate, reference)
    # The caller chooses what a clip is linked as (the command: blind copies of the clips).
    linked = sample.tasks(lambda num, slot, _: f"/media/{num}-{slot}.mp4")[0]["data"]
    assert (linked["video1"], linked["video2"]) == ("/media/1-1.mp4", "/media/1-2.mp4")
    # Without candidate folders there are no clips.
    assert "video1" not in stratified_pairs(_dataset(1), ["a"]).tasks()[0]["data"]


def test_a_missing_candidate_clip_is_an_error_naming_system_instance_and_path(tmp_path: Path) -> None:
    items = _dataset(1)
    folder = _clips(tmp_path / "a", items)
    sampled = stratified_pairs(items, ["a"], per_combination=1, candidates={"a": folder})
    first = next(i for i in items if i.id == sampled.pairs[0].instance_id)
    gone = folder / "video" / str(first.index) / "generated.mp4"
    gone.unlink()
    with pytest.raises(DataError, match="1 linked candidate clip") as info:
        stratified_pairs(items, ["a"], per_combination=1, candidates={"a": folder})
    assert info.value.problems == [f"system a, instance {first.id} (row {first.index}): no clip at {gone}"]


def test_tasks_round_trip_through_the_key_and_the_export_reader() -> None:
    sample = stratified_pairs(_dataset(4), ["a", "b"], per_combination=1)
    exported: list[dict[str, Any]] = []
    for tid, task in enumerate(sample.tasks()):
        data = task["data"]
        result = [
            {"from_name": f"v{video}_{cell.dimension}_{cell.audio_type}", "value": {"number": 5 + video}}
            for cell in active_cells(data["tags"].split(","))
            for video in (1, 2)
        ]
        exported.append(
            {**task, "id": tid, "annotations": [{"id": tid, "completed_by": 1, "result": result}]}
        )
    with pytest.raises(DataError, match="a blind export; apply the study's key first"):
        parse_two_stage_export(exported)
    parsed = parse_two_stage_export(apply_key(exported, sample.key(seed=0)))
    assert parsed.counts["scored"] == len(sample.pairs) == 29 * 2
    assert len(parsed.comparisons) == len(sample.pairs)
    assert Counter(c.system for c in parsed.comparisons) == {"a": 29, "b": 29}


@pytest.mark.parametrize(
    ("systems", "kwargs", "message"),
    [
        ([], {}, "at least one system"),
        (["ground_truth"], {}, "reference side"),
        (["a", "a"], {}, "named twice: a"),
        (["a"], {"per_combination": 0}, "at least 1"),
        (["a", "b"], {"candidates": {"a": Path("x")}}, "no candidate folder for b"),
    ],
)
def test_bad_arguments(systems: list[str], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message):
        stratified_pairs(_dataset(1), systems, **kwargs)
