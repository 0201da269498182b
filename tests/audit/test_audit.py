"""The generic audit: text shingles and shared spans, the DCT pHash, clusters and overlaps, the file lookup."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageEnhance

from omnieval.audit import (
    AuditInputs,
    AuditInstance,
    AuditOptions,
    AuditPage,
    SpanIndex,
    UnionFind,
    condition_overlaps,
    duplicate_clusters,
    find_audit_clusters,
    hamming,
    image_hashes,
    image_pairs,
    longest_common_span,
    phash_image,
    phash_pixels,
    run_audit,
    shingles,
    text_pairs,
    words,
)

# ------------------------------------------------------------------------------------------------
# text


def test_words_are_normalized_and_short_texts_are_one_shingle() -> None:
    assert words("Ｔhe  FOX’s lantern—lit!") == ("the", "fox's", "lantern", "lit")
    assert shingles(("a", "b"), 5) == frozenset({("a", "b")})
    assert shingles((), 5) == frozenset()
    assert len(shingles(tuple("abcdefg"), 5)) == 3


def test_shared_spans_merge_consecutive_windows_and_skip_excluded_texts() -> None:
    page = words("one two three four five six seven eight nine ten eleven")
    index = SpanIndex({"p": page, "own": page}, 8)
    query = words("zero one two three four five six seven eight nine ten stop")
    (span,) = index.shared(query, exclude=["own"])
    assert span.length == 10 and span.start == 1 and span.sources == ("p",)
    assert span.text == "one two three four five six seven eight nine ten"
    assert index.shared(query, exclude=["p", "own"]) == []
    assert index.shared(words("one two three four five six seven"), exclude=()) == []  # 7 words: none


def test_longest_common_span() -> None:
    assert longest_common_span(words("a b c d e"), words("x b c d y")) == 3
    assert longest_common_span((), words("a")) == 0


# ------------------------------------------------------------------------------------------------
# pHash


def _dct_basis(u: int, x: int, n: int = 32) -> float:
    return math.cos(math.pi * (2 * x + 1) * u / (2 * n))


def test_phash_reads_the_low_frequency_block_against_its_median() -> None:
    # Hand case: an image built from DCT basis functions with known weights. The weight of (u, v) is
    # 8u + v - 32 (k = 8u + v from 1 to 63), plus a constant grey level, whose DC coefficient is the
    # largest. Sorted, the block is 31 negatives, a zero (k = 32), 31 positives and the DC term, so
    # the median lies between the zero and the smallest positive: bits 1..32 are 0, the DC bit and
    # bits 33..63 are 1 (the basis functions are orthogonal, so no weight leaks into another).
    n = 32
    pixels = np.full((n, n), 128.0)
    for u in range(8):
        for v in range(8):
            c = 8 * u + v - 32
            if u == 0 and v == 0:
                continue  # the mean: its DCT coefficient is set by the constant 128 (large, > median)
            row = np.array([_dct_basis(u, x) for x in range(n)])
            col = np.array([_dct_basis(v, y) for y in range(n)])
            pixels += 0.05 * c * np.outer(row, col)
    value = phash_pixels(pixels)
    bits = [(value >> (63 - k)) & 1 for k in range(64)]
    assert bits[0] == 1
    assert bits[1:33] == [0] * 32
    assert bits[33:] == [1] * 31
    with pytest.raises(ValueError, match="32x32"):
        phash_pixels(np.zeros((8, 8)))


def _picture(seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 255, size=(8, 8), dtype=np.uint8)
    return Image.fromarray(base, mode="L").resize((128, 128), Image.Resampling.BICUBIC).convert("RGB")


def test_phash_is_stable_under_mild_edits_and_far_for_another_picture() -> None:
    a = _picture(1)
    edited = ImageEnhance.Brightness(a.resize((100, 100))).enhance(1.1)
    other = _picture(2)
    assert hamming(phash_image(a), phash_image(a.copy())) == 0
    assert hamming(phash_image(a), phash_image(edited)) <= 6
    assert hamming(phash_image(a), phash_image(other)) >= 16


# ------------------------------------------------------------------------------------------------
# clusters and overlaps on a planted dataset

STORY = [
    "the little fox found a lantern under the old oak tree and carried it home",
    "rain fell on the river while the mice waited by the water for their friend",
    "at night the stars came out and the owl told a story about the moon",
    "the robot rolled down the street and waved at every shop window it passed",
    "snow covered the hills and the girl pulled her sled to the top of the ridge",
    "a lighthouse keeper climbed the stairs to light the lamp before the storm came",
]
LEAK = "the robot rolled down the street and waved at every"  # 10 words of page b/p1


def _planted(tmp_path: Path) -> AuditInputs:
    """Three books: book c republishes book a's page 1 (text with one word changed, same picture), and
    a condition of book b's second transition copies ten words of another book's page."""
    pictures = {}
    for k in range(6):
        path = tmp_path / f"img{k}.png"
        _picture(10 + k).save(path)
        pictures[k] = path
    copy = tmp_path / "copy.png"
    ImageEnhance.Contrast(_picture(10)).enhance(1.05).save(copy)
    pages = [
        AuditPage("a/p0", STORY[0], pictures[0], "a"),
        AuditPage("a/p1", STORY[1], pictures[1], "a"),
        AuditPage("a/p2", STORY[2], pictures[2], "a"),
        AuditPage("b/p0", STORY[4], pictures[4], "b"),
        AuditPage("b/p1", STORY[3], pictures[3], "b"),
        AuditPage("b/p2", STORY[5], pictures[5], "b"),
        AuditPage("c/p0", STORY[0].replace("carried", "took"), copy, "c"),
        AuditPage("c/p1", "a quiet page about nothing in particular at all today", None, "c"),
    ]

    def inst(book: str, a: int, b: int, scene: str = "a calm scene") -> AuditInstance:
        return AuditInstance(
            f"{book}/p{a}__p{b}",
            (f"{book}/p{a}", f"{book}/p{b}"),
            f"{book}/p{b}",
            (("scene", scene), ("action", "looks around")),
        )

    instances = [
        inst("a", 0, 1),
        inst("a", 1, 2),
        inst("b", 0, 1, scene=LEAK + " and smiled"),  # own page b/p1: not a leak
        inst("b", 1, 2, scene=LEAK),  # b/p1 is its own page too: not a leak
        inst("c", 0, 1, scene="he said " + STORY[5]),  # b/p2 belongs to another book: a leak
    ]
    return AuditInputs("toy", tmp_path, "d" * 64, ("scene", "action"), tuple(pages), tuple(instances))


def test_planted_duplicates_form_one_cluster_and_shared_pages_do_not_join(tmp_path: Path) -> None:
    inputs = _planted(tmp_path)
    options = AuditOptions()
    text = text_pairs(inputs, options)
    image = image_pairs(inputs, image_hashes(inputs), options)
    assert [(p.a, p.b) for p in text] == [("a/p0", "c/p0")]
    assert [(p.a, p.b) for p in image] == [("a/p0", "c/p0")]
    doc = duplicate_clusters(inputs, text + image, options, n_images=7)
    # a/p0__p1 and c/p0__p1 hold the twin pages; a/p1__p2 shares page a/p1 with a/p0__p1 but that
    # page has no twin, so it stays out.
    assert [c["members"] for c in doc["clusters"]] == [["a/p0__p1", "c/p0__p1"]]
    assert doc["n_clusters"] == 1 and doc["n_flagged_instances"] == 2
    assert {p["kind"] for p in doc["clusters"][0]["pairs"]} == {"text", "image"}
    assert doc["instance_ids"] == [i.id for i in inputs.instances]


def test_pages_of_one_group_pair_only_when_asked(tmp_path: Path) -> None:
    inputs = _planted(tmp_path)
    twin = AuditPage("a/p9", STORY[0], None, "a")
    grown = AuditInputs(
        inputs.benchmark,
        inputs.dataset,
        inputs.digest,
        inputs.fields,
        (*inputs.pages, twin),
        inputs.instances,
    )
    assert ("a/p0", "a/p9") not in {(p.a, p.b) for p in text_pairs(grown, AuditOptions())}
    assert ("a/p0", "a/p9") in {(p.a, p.b) for p in text_pairs(grown, AuditOptions(within_group=True))}


def test_planted_leak_is_found_and_own_pages_are_not_leaks(tmp_path: Path) -> None:
    doc = condition_overlaps(_planted(tmp_path), AuditOptions())
    rows = {r["id"]: r for r in doc["instances"]}
    assert rows["b/p0__p1"]["shared_spans"] == [] and rows["b/p1__p2"]["shared_spans"] == []
    (span,) = rows["c/p0__p1"]["shared_spans"]
    assert span["field"] == "scene" and span["pages"] == ["b/p2"] and span["words"] == len(words(STORY[5]))
    assert doc["summary"]["n_instances_with_shared_span"] == 1
    # against its own target page, b/p0__p1's scene shares the 10 copied words
    assert rows["b/p0__p1"]["longest_span_with_target"] == 10
    assert rows["b/p0__p1"]["longest_span_field"] == "scene"
    assert doc["summary"]["n_target_span_at_least_k"] == 1


def test_union_find_groups_in_order() -> None:
    uf = UnionFind(["a", "b", "c", "d"])
    uf.union("d", "b")
    uf.union("c", "c")
    assert uf.groups(["a", "b", "c", "d"]) == [["a"], ["b", "d"], ["c"]]


def test_run_audit_writes_three_files_and_the_lookup_finds_them(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    inputs = _planted(tmp_path / "data")
    root = tmp_path / "audits"
    outcome = run_audit(inputs, AuditOptions(), root / "toy")
    assert {p.name for p in (root / "toy").iterdir()} == {"clusters.json", "overlaps.json", "audit.html"}
    html = outcome.report_path.read_text(encoding="utf-8")
    assert "dup-001" in html and "c/p0__p1" in html and "b/p2" in html
    ids = [i.id for i in inputs.instances]
    assert find_audit_clusters(ids[:2], root).path == root / "toy" / "clusters.json"
    assert find_audit_clusters([*ids, "elsewhere"], root).path is None
    # another audit of different data with the same ids is ambiguous
    other = json.loads(outcome.clusters_path.read_text())
    other["dataset_digest"] = "e" * 64
    (root / "other").mkdir()
    (root / "other" / "clusters.json").write_text(json.dumps(other))
    found = find_audit_clusters(ids, root)
    assert found.path is None and "several audits" in str(found.reason)
    assert "no audit folder" in str(find_audit_clusters(ids, tmp_path / "none").reason)
