from __future__ import annotations

import random
from collections import Counter

from omnieval.corpora import ManifestRow, SplitFractions, assign_splits, find_leaks, leaking_rows
from omnieval.corpora._manifest import with_splits


def _corpus(n_female: int = 10, n_male: int = 14, clips: int = 6) -> list[ManifestRow]:
    rows = []
    for label, count in (("female", n_female), ("male", n_male)):
        for s in range(count):
            speaker = f"{label}{s}"
            rows += [
                ManifestRow(f"{speaker}/{k}.wav", label, speaker, "t", sha256=f"{speaker}-{k}")
                for k in range(clips)
            ]
    return rows


def test_speaker_disjoint_balanced_and_covering() -> None:
    rows = _corpus()
    splits = assign_splits(rows, SplitFractions(train=0.6, dev=0.2, test=0.2), seed=3)
    assigned = with_splits(rows, splits)
    assert find_leaks(assigned) == []
    per_speaker = {r.speaker: {x.split for x in assigned if x.speaker == r.speaker} for r in assigned}
    assert per_speaker
    assert all(len(s) == 1 for s in per_speaker.values())
    counts = Counter((r.split, r.label) for r in assigned)
    for split in ("train", "dev", "test"):
        assert counts[(split, "female")] > 0 and counts[(split, "male")] > 0
    # Shares land near the targets (whole speakers of 6 clips move at once).
    total = len(rows)
    assert abs(sum(v for (s, _), v in counts.items() if s == "train") / total - 0.6) < 0.12


def test_assignment_ignores_row_order_and_depends_on_seed() -> None:
    rows = _corpus()
    first = assign_splits(rows, SplitFractions(), seed=0)
    again = assign_splits(random.Random(1).sample(rows, len(rows)), SplitFractions(), seed=0)
    assert first == again
    others = [assign_splits(rows, SplitFractions(train=0.6, dev=0.2, test=0.2), seed=s) for s in range(1, 6)]
    assert any(o != assign_splits(rows, SplitFractions(train=0.6, dev=0.2, test=0.2), seed=0) for o in others)


def test_speakers_sharing_audio_stay_together() -> None:
    rows = _corpus(4, 4, 3)
    # The same recording filed under two speakers: they must end up in one split.
    rows.append(ManifestRow("dup/x.wav", "female", "male3", "t", sha256="female0-0"))
    for seed in range(10):
        assigned = with_splits(
            rows, assign_splits(rows, SplitFractions(train=0.5, dev=0.25, test=0.25), seed=seed)
        )
        assert find_leaks(assigned) == []


def test_leaks_are_reported_per_row_and_in_words() -> None:
    rows = [
        ManifestRow("a.wav", "x", "s1", "t", "train", sha256="h1"),
        ManifestRow("b.wav", "x", "s1", "t", "test", sha256="h2"),
        ManifestRow("c.wav", "y", "s2", "t", "train", sha256="h3"),
        ManifestRow("d.wav", "y", "s3", "t", "dev", sha256="h3"),
    ]
    assert leaking_rows(rows) == [True, True, True, True]
    problems = find_leaks(rows)
    assert any("speaker 's1' appears in splits test, train" in p for p in problems)
    assert any("identical audio" in p and "c.wav (train)" in p and "d.wav (dev)" in p for p in problems)
