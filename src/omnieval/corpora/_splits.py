"""Train/dev/test splits that never share a speaker or an audio file between splits.

Speakers are grouped first: two speakers whose clips share a file hash (the same recording filed
under two speaker ids) land in one group, so byte-identical audio can never straddle splits. Whole
groups are then assigned greedily, largest first, to the split with the largest remaining per-label
deficit against its target share, which keeps every split close to the corpus's label balance.

Example:
    >>> from omnieval.corpora._manifest import with_splits
    >>> speakers = ("a1", "a2", "a3", "b1", "b2", "b3")
    >>> rows = [ManifestRow(f"{s}/{i}.wav", s[0], s, "x", sha256=s + str(i)) for s in speakers for i in "12"]
    >>> splits = assign_splits(rows, SplitFractions(train=0.34, dev=0.33, test=0.33), seed=0)
    >>> sorted({splits[r.path] for r in rows if r.speaker == "a1"}) in (["dev"], ["test"], ["train"])
    True
    >>> find_leaks(with_splits(rows, splits))
    []
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from omnieval.corpora._manifest import SPLITS, ManifestRow
from omnieval.errors import DataError

__all__ = ["SplitFractions", "assign_splits", "find_leaks", "leaking_rows", "speaker_groups"]


class SplitFractions(BaseModel):
    """Target share of clips per split; must sum to 1."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    train: float = Field(default=0.8, ge=0.0, le=1.0)
    dev: float = Field(default=0.1, ge=0.0, le=1.0)
    test: float = Field(default=0.1, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sums_to_one(self) -> SplitFractions:
        if abs(self.train + self.dev + self.test - 1.0) > 1e-6:
            raise ValueError(f"split fractions must sum to 1, got {self.as_tuple()}")
        return self

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.train, self.dev, self.test)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, item: str) -> str:
        self.parent.setdefault(item, item)
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # Keep the lexicographically smaller root so groups are independent of input order.
            low, high = sorted((ra, rb))
            self.parent[high] = low


def speaker_groups(rows: Sequence[ManifestRow]) -> dict[str, str]:
    """Map each speaker to its group id (speakers sharing any file hash share a group)."""
    uf = _UnionFind()
    owner_of_hash: dict[str, str] = {}
    for row in rows:
        uf.find(row.speaker)
        if row.sha256:
            owner = owner_of_hash.setdefault(row.sha256, row.speaker)
            uf.union(owner, row.speaker)
    return {speaker: uf.find(speaker) for speaker in uf.parent}


def assign_splits(rows: Sequence[ManifestRow], fractions: SplitFractions, *, seed: int) -> dict[str, str]:
    """Assign every row a split; returns ``{row.path: split}``.

    Groups (speakers joined by shared file hashes) are never divided. Assignment is deterministic
    for a given ``seed`` and set of rows, whatever their order.
    """
    if not rows:
        raise DataError("cannot split an empty corpus")
    groups = speaker_groups(rows)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        counts[groups[row.speaker]][row.label] += 1
    labels = sorted({row.label for row in rows})
    totals = Counter(row.label for row in rows)
    shares = fractions.as_tuple()
    target = {
        split: {label: share * totals[label] for label in labels}
        for split, share in zip(SPLITS, shares, strict=True)
    }
    current: dict[str, Counter[str]] = {split: Counter() for split in SPLITS}
    members: dict[str, list[str]] = {split: [] for split in SPLITS}

    order = sorted(counts)
    random.Random(seed).shuffle(order)
    # Largest groups first (stable, so the seeded shuffle breaks ties): small groups fill the gaps.
    order.sort(key=lambda g: -sum(counts[g].values()))
    for group in order:
        best_split, best_score = SPLITS[0], float("-inf")
        for split, share in zip(SPLITS, shares, strict=True):
            if share <= 0:
                continue
            score = sum(
                n * (target[split][label] - current[split][label]) for label, n in counts[group].items()
            )
            if score > best_score:
                best_split, best_score = split, score
        members[best_split].append(group)
        current[best_split].update(counts[group])

    _cover_every_label(members, counts, labels, shares)
    assignment = {group: split for split, groups_in in members.items() for group in groups_in}
    return {row.path: assignment[groups[row.speaker]] for row in rows}


def _cover_every_label(
    members: dict[str, list[str]],
    counts: dict[str, Counter[str]],
    labels: list[str],
    shares: tuple[float, ...],
) -> None:
    """Move single groups so that every split with a positive share sees every label, when possible.

    A test split without one of the labels would make its accuracy silently about fewer classes.
    """
    for split, share in zip(SPLITS, shares, strict=True):
        if share <= 0:
            continue
        for label in labels:
            if any(counts[g][label] for g in members[split]):
                continue
            donors = [
                (s, g)
                for s in SPLITS
                if s != split
                for g in members[s]
                if counts[g][label] and sum(1 for h in members[s] if counts[h][label]) >= 2
            ]
            if not donors:
                continue
            donor_split, group = min(donors, key=lambda sg: (sum(counts[sg[1]].values()), sg[1]))
            members[donor_split].remove(group)
            members[split].append(group)


def _leak_index(rows: Sequence[ManifestRow]) -> tuple[dict[str, set[str]], dict[str, list[ManifestRow]]]:
    """The splits each speaker occurs in, and the rows sharing each file hash (unhashed rows left out).

    A leak is either kind seen in more than one split; the gate's per-row flags and the readable
    problem list both read this one index, so they can never disagree about what leaks.
    """
    speaker_splits: dict[str, set[str]] = defaultdict(set)
    hash_rows: dict[str, list[ManifestRow]] = defaultdict(list)
    for row in rows:
        speaker_splits[row.speaker].add(row.split)
        if row.sha256:
            hash_rows[row.sha256].append(row)
    return speaker_splits, hash_rows


def leaking_rows(rows: Sequence[ManifestRow]) -> list[bool]:
    """Per row: True when its speaker or its file hash also occurs in another split."""
    speaker_splits, hash_rows = _leak_index(rows)
    hash_splits = {digest: {r.split for r in same} for digest, same in hash_rows.items()}
    return [
        len(speaker_splits[row.speaker]) > 1 or (bool(row.sha256) and len(hash_splits[row.sha256]) > 1)
        for row in rows
    ]


def find_leaks(rows: Sequence[ManifestRow]) -> list[str]:
    """Readable problems: each speaker or file hash that occurs in more than one split."""
    speaker_splits, hash_rows = _leak_index(rows)
    problems = [
        f"speaker {speaker!r} appears in splits {', '.join(sorted(splits))}"
        for speaker, splits in sorted(speaker_splits.items())
        if len(splits) > 1
    ]
    for digest, same in sorted(hash_rows.items()):
        splits = {r.split for r in same}
        if len(splits) > 1:
            paths = ", ".join(f"{r.path} ({r.split})" for r in same[:4])
            problems.append(f"identical audio (sha256 {digest[:12]}) in several splits: {paths}")
    return problems
