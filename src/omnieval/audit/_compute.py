"""The audit's steps: near-duplicate page pairs, duplicate clusters of instances, condition overlaps.

Each step is a plain function of the inputs (the Prefect flow ``omnieval.flows.audit`` schedules
them; ``omnieval audit --engine local`` calls them in a row). The two documents they build are what
``clusters.json`` and ``overlaps.json`` hold (docs/data.md, "Dataset audit").
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from omnieval.audit._model import AuditInputs, AuditOptions
from omnieval.audit._phash import close_pairs, phash_file
from omnieval.audit._text import SpanIndex, longest_common_span, shingles, similar_pairs, words
from omnieval.errors import DataError

AUDIT_VERSION = 1
"""Layout version of ``clusters.json`` and ``overlaps.json``."""

NORMALIZATION = "NFKC, case-folded, words = letter/digit runs with inner apostrophes"


@dataclass(frozen=True)
class PagePair:
    """Two pages found to be near-duplicates, and by what.

    Attributes:
        a: the first page's id (earlier in dataset order).
        b: the second page's id.
        kind: ``text`` (shingle Jaccard) or ``image`` (pHash distance).
        score: the Jaccard index (text) or the number of differing hash bits (image).
    """

    a: str
    b: str
    kind: Literal["text", "image"]
    score: float

    def as_dict(self) -> dict[str, Any]:
        key = "jaccard" if self.kind == "text" else "distance"
        value: float | int = round(self.score, 4) if self.kind == "text" else int(self.score)
        return {"a": self.a, "b": self.b, "kind": self.kind, key: value}


class UnionFind:
    """Disjoint sets over hashable keys (path halving, union by size)."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._parent: dict[str, str] = {}
        self._size: dict[str, int] = {}
        for k in keys:
            self.add(k)

    def add(self, key: str) -> None:
        if key not in self._parent:
            self._parent[key] = key
            self._size[key] = 1

    def find(self, key: str) -> str:
        self.add(key)
        while self._parent[key] != key:
            self._parent[key] = self._parent[self._parent[key]]
            key = self._parent[key]
        return key

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self._size[ra] < self._size[rb]:
            ra, rb = rb, ra
        self._parent[rb] = ra
        self._size[ra] += self._size[rb]

    def groups(self, order: Sequence[str]) -> list[list[str]]:
        """The sets, each in ``order``'s order, listed by their first member's position."""
        found: dict[str, list[str]] = {}
        for key in order:
            if key in self._parent:
                found.setdefault(self.find(key), []).append(key)
        return list(found.values())


def _counted(inputs: AuditInputs, options: AuditOptions) -> Callable[[str, str], bool]:
    """Whether a pair of pages may count: always across groups, within one only when asked."""
    group = {p.id: p.group for p in inputs.pages}

    def counted(a: str, b: str) -> bool:
        return options.within_group or not group[a] or group[a] != group[b]

    return counted


def text_pairs(inputs: AuditInputs, options: AuditOptions) -> list[PagePair]:
    """Page pairs whose word ``ngram`` shingle sets reach the Jaccard threshold."""
    sets = {p.id: shingles(words(p.text), options.ngram) for p in inputs.pages}
    counted = _counted(inputs, options)
    return [
        PagePair(a, b, "text", s) for a, b, s in similar_pairs(sets, options.text_threshold) if counted(a, b)
    ]


def image_hashes(inputs: AuditInputs) -> dict[str, int]:
    """The pHash of every page with an image (page id -> 64-bit hash); an unreadable image is bad data."""
    out: dict[str, int] = {}
    for page in inputs.pages:
        if page.image is None:
            continue
        try:
            out[page.id] = phash_file(page.image)
        except (OSError, ValueError) as exc:
            raise DataError(f"page {page.id}: cannot read image {page.image}: {exc}") from None
    return out


def image_pairs(inputs: AuditInputs, hashes: dict[str, int], options: AuditOptions) -> list[PagePair]:
    """Page pairs whose image hashes differ in at most ``image_distance`` bits."""
    counted = _counted(inputs, options)
    return [
        PagePair(a, b, "image", d) for a, b, d in close_pairs(hashes, options.image_distance) if counted(a, b)
    ]


def header(inputs: AuditInputs) -> dict[str, Any]:
    """What both documents say about the audited dataset."""
    return {
        "audit_version": AUDIT_VERSION,
        "benchmark": inputs.benchmark,
        "dataset": str(inputs.dataset),
        "dataset_name": inputs.dataset.name,
        "dataset_digest": inputs.digest,
        "n_instances": len(inputs.instances),
        "n_pages": len(inputs.pages),
    }


def duplicate_clusters(
    inputs: AuditInputs, pairs: Sequence[PagePair], options: AuditOptions, *, n_images: int
) -> dict[str, Any]:
    """The ``clusters.json`` document: instances joined through near-duplicate pages.

    Pages linked by a near-duplicate pair (text or image) form page groups (union-find). Two
    instances fall in one cluster when they contain pages of the same group; an instance is never
    joined to another merely because both contain the same page (consecutive transitions share
    one), only through a pair of distinct pages found alike. A cluster of one instance (its own two
    pages alike) is listed too; the duplicate-cluster sensitivity analysis needs two members.
    """
    page_order = [p.id for p in inputs.pages]
    pages = UnionFind()
    for pair in pairs:
        pages.union(pair.a, pair.b)
    groups = [g for g in pages.groups(page_order) if len(g) >= 2]
    group_of = {page: k for k, g in enumerate(groups) for page in g}
    holders: dict[int, list[str]] = defaultdict(list)
    for inst in inputs.instances:
        for page in dict.fromkeys(inst.pages):
            if page in group_of:
                holders[group_of[page]].append(inst.id)
    instances = UnionFind()
    for members in holders.values():
        for other in members:
            instances.union(members[0], other)
    instance_order = [i.id for i in inputs.instances]
    own_pages = {i.id: i.pages for i in inputs.instances}
    clusters = []
    for k, members in enumerate(instances.groups(instance_order), start=1):
        member_pages = {p for m in members for p in own_pages[m] if p in group_of}
        evidence = [p.as_dict() for p in pairs if p.a in member_pages or p.b in member_pages]
        clusters.append(
            {
                "id": f"dup-{k:03d}",
                "members": members,
                "pages": [p for p in page_order if p in member_pages],
                "pairs": evidence,
            }
        )
    flagged = {m for c in clusters if len(c["members"]) >= 2 for m in c["members"]}
    return {
        **header(inputs),
        "method": {
            "text": {
                "shingles": f"word {options.ngram}-grams",
                "similarity": "Jaccard of exact shingle sets (no MinHash)",
                "threshold": options.text_threshold,
                "normalization": NORMALIZATION,
            },
            "image": {
                "hash": "64-bit DCT pHash (grey, 32x32, 8x8 low frequencies above their median)",
                "max_distance": options.image_distance,
                "enabled": options.images,
                "n_hashed": n_images,
            },
            "within_group": options.within_group,
            "join": "union-find over near-duplicate page pairs, then over the instances holding those pages",
        },
        "instance_ids": instance_order,
        "n_page_pairs": {
            "text": sum(p.kind == "text" for p in pairs),
            "image": sum(p.kind == "image" for p in pairs),
        },
        "n_clusters": sum(len(c["members"]) >= 2 for c in clusters),
        "n_flagged_instances": len(flagged),
        "clusters": clusters,
    }


def condition_overlaps(inputs: AuditInputs, options: AuditOptions) -> dict[str, Any]:
    """The ``overlaps.json`` document: per instance, the ``span_words``-word spans its condition texts
    share with pages outside the instance, and the longest span they share with its target page.

    Spans are formed within one condition text at a time (never across two fields), and a page the
    instance itself holds (its input and its target) is not "another page".
    """
    k = options.span_words
    page_words = {p.id: words(p.text) for p in inputs.pages}
    index = SpanIndex(page_words, k)
    rows = []
    longest_all: list[int] = []
    by_condition: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for inst in inputs.instances:
        spans = []
        longest = 0
        longest_field: str | None = None
        target = page_words.get(inst.target, ()) if inst.target else ()
        joined: list[str] = []
        for field, text in inst.conditions:
            tokens = words(text)
            joined.extend((field, *tokens))
            for span in index.shared(tokens, exclude=inst.pages):
                spans.append(
                    {"field": field, "span": span.text, "words": span.length, "pages": list(span.sources)}
                )
            if target:
                n = longest_common_span(tokens, target)
                if n > longest:
                    longest, longest_field = n, field
        by_condition[tuple(joined)].append(inst.id)
        if inst.target is not None:
            longest_all.append(longest)
        rows.append(
            {
                "id": inst.id,
                "n_shared_spans": len(spans),
                "shared_spans": spans,
                "target": inst.target,
                "longest_span_with_target": longest if inst.target is not None else None,
                "longest_span_field": longest_field,
            }
        )
    duplicates = [ids for ids in by_condition.values() if len(ids) >= 2]
    return {
        **header(inputs),
        "method": {
            "span_words": k,
            "fields": list(inputs.fields),
            "compared_with": "every page outside the instance's own pages; spans within one condition text",
            "normalization": NORMALIZATION,
        },
        "summary": {
            "n_instances_with_shared_span": sum(1 for r in rows if r["n_shared_spans"]),
            "n_shared_spans": sum(r["n_shared_spans"] for r in rows),
            "longest_span_with_target_median": statistics.median(longest_all) if longest_all else None,
            "n_target_span_at_least_k": sum(1 for n in longest_all if n >= k),
            "n_duplicate_condition_groups": len(duplicates),
        },
        "duplicate_conditions": duplicates,
        "instances": rows,
    }
