"""The known-set check's core: accuracy and agreement arithmetic, the manifest, floors, the result
cache, and what health.json, the verdict and MLflow read from it (no benchmark, no model)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pytest

from omnieval.errors import DataError
from omnieval.judges import (
    Floors,
    KnownItem,
    KnownSetManifest,
    PairRule,
    PairVerdict,
    VariantScore,
    VariantScores,
    check_known_set,
    judge_known_set,
    load_known_set,
    merge_meta_eval,
    meta_eval_failures,
    meta_eval_metrics,
    pair_figures,
    pair_verdict,
)
from omnieval.judges._meta import KnownPair, summarize


def _v(better: float | None, worse: float | None, status: str = "ok", worse_id: str = "bad") -> PairVerdict:
    return PairVerdict("j", "text", "i", "gt", worse_id, better, worse, status)  # type: ignore[arg-type]


def test_accuracy_and_agreement_by_hand() -> None:
    # Five judgeable pairs: right (9>2), tie (5=5), wrong (3<8), right (7>6), invalid (no verdict);
    # one unavailable pair is left out.
    verdicts = [_v(9, 2), _v(5, 5), _v(3, 8), _v(7, 6), _v(None, 4, "invalid"), _v(None, None, "unavailable")]
    f = pair_figures(verdicts)
    assert (f.n_pairs, f.correct, f.ties, f.wrong, f.invalid) == (5, 2, 1, 1, 1)
    # accuracy: ties and the invalid pair count as wrong -> 2 of 5.
    assert f.accuracy == pytest.approx(2 / 5)
    # agreement (Kendall's tau-a over the 5 pairs): (concordant 2 - discordant 1) / 5; ties and the
    # invalid pair count 0.
    assert f.agreement == pytest.approx((2 - 1) / 5)


def test_constant_and_inverted_judges() -> None:
    constant = pair_figures([_v(5, 5)] * 4)
    assert (constant.accuracy, constant.agreement) == (0.0, 0.0)
    inverted = pair_figures([_v(1, 9)] * 3)
    assert (inverted.accuracy, inverted.agreement) == (0.0, -1.0)
    nothing = pair_figures([_v(None, None, "unavailable")])
    assert (nothing.n_pairs, nothing.accuracy, nothing.agreement) == (0, None, None)


def _scores(**sides: VariantScore) -> VariantScores:
    return VariantScores({("j", "x", "text", v): side for v, side in sides.items()})


def test_pair_verdict_sides() -> None:
    pair = KnownPair("i", "text", "gt", "bad")
    rule = PairRule()
    ok = pair_verdict("j", pair, "x", _scores(gt=VariantScore(9.0, "ok"), bad=VariantScore(2.0, "ok")), rule)
    assert ok.outcome == "correct"
    bad = pair_verdict(
        "j", pair, "x", _scores(gt=VariantScore(9.0, "ok"), bad=VariantScore(None, "parse_error")), rule
    )
    assert bad.status == "invalid" and bad.note == "bad: parse_error" and bad.outcome == "invalid"
    nan = pair_verdict("j", pair, "x", _scores(gt=VariantScore(float("nan"), "ok")), rule)
    assert nan.status == "invalid" and nan.note == "gt: ok; bad: not judged"
    na = _scores(gt=VariantScore(None, "not_applicable", "no vlm"), bad=VariantScore(None, "not_applicable"))
    assert (pair_verdict("j", pair, "x", na, rule).status, pair_verdict("j", pair, "x", na, rule).note) == (
        "unavailable",
        "no vlm",
    )
    blank = _scores(gt=VariantScore(None, "not_applicable"))
    assert pair_verdict("j", pair, "x", blank, rule).note == "not applicable"
    assert pair_verdict("j", pair, "x", blank, PairRule(unavailable_note="")).note == ""
    expected = _scores(gt=VariantScore(9.0, "ok", expected=8.5), bad=VariantScore(9.0, "ok", expected=3.0))
    tied = pair_verdict("j", pair, "x", expected, rule)
    assert (tied.outcome, tied.expected_outcome) == ("tie", "correct")


def test_pair_verdict_side_by_side() -> None:
    # Pairwise judging: one call showed "bad" beside "gt"; gt's score is that call's other side, and
    # two damaged variants compare their own calls' scores.
    found = VariantScores(
        {
            ("j", "x", "text", "bad"): VariantScore(3.0, "ok"),
            ("j", "x", "text", "worse"): VariantScore(1.0, "ok"),
        },
        {
            ("j", "x", "text", "bad"): VariantScore(8.0, "ok"),
            ("j", "x", "text", "worse"): VariantScore(2.0, "ok"),
        },
    )
    rule = PairRule(tracks_apart=False, paired_with="gt")
    first = pair_verdict("j", KnownPair("i", "text", "gt", "bad"), "x", found, rule)
    second = pair_verdict("j", KnownPair("i", "text", "gt", "worse"), "x", found, rule)
    graded = pair_verdict("j", KnownPair("i", "text", "bad", "worse"), "x", found, rule)
    assert [(v.better_score, v.worse_score) for v in (first, second, graded)] == [
        (8.0, 3.0),
        (2.0, 1.0),
        (3.0, 1.0),
    ]
    missing = pair_verdict("j", KnownPair("i", "speech", "gt", "bad"), "x", found, rule)
    assert missing.status == "invalid" and missing.note == "gt: not judged; bad: not judged"


def test_summary_floors_and_per_variant_breakdown() -> None:
    verdicts = [_v(9, 2, worse_id="shuffled"), _v(9, 2, worse_id="shuffled"), _v(5, 5, worse_id="wrong_name")]
    verdicts += [PairVerdict("j", "speech", "i", "gt", "muted", None, None, "unavailable", "no model")]
    floors = Floors(0.7, {"speech": 0.1, "j/text": 0.6})
    assert floors.floor_for("j", "text") == 0.6 and floors.floor_for("k", "text") == 0.7
    summary = summarize(verdicts, floors)
    text = summary["j"]["text"]
    assert text["accuracy"] == pytest.approx(2 / 3) and text["floor"] == 0.6 and text["status"] == "ok"
    assert text["by_variant"] == {
        "shuffled": {"n_pairs": 2, "correct": 2, "accuracy": 1.0},
        "wrong_name": {"n_pairs": 1, "correct": 0, "accuracy": 0.0},
    }
    assert (
        summary["j"]["speech"]["status"] == "unavailable" and summary["j"]["speech"]["reason"] == "no model"
    )
    strict = summarize(verdicts, Floors(0.7))
    assert strict["j"]["text"]["status"] == "below_floor" and strict["j"]["text"]["passed"] is False


def _manifest(tmp_path: Path, items: list[dict[str, Any]]) -> Path:
    path = tmp_path / "known_set.json"
    doc = {"format": 1, "benchmark": "demo", "name": "demo-known", "items": items}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


GT = {"id": "ground_truth", "rank": 0, "derive": "ground_truth"}


def test_manifest_validation_names_the_file_and_field(tmp_path: Path) -> None:
    bad = {"id": "shuffled", "rank": 1, "derive": "shuffled_words", "tracks": ["image"]}
    path = _manifest(tmp_path, [{"id": "a", "instance_id": "x", "tracks": ["text"], "variants": [GT, bad]}])
    with pytest.raises(DataError, match=r"known_set.json: invalid known-set manifest(.|\n)*not the item's"):
        load_known_set(path)
    same = {"id": "copy", "rank": 0, "derive": "ground_truth"}
    path = _manifest(tmp_path, [{"id": "a", "instance_id": "x", "tracks": ["text"], "variants": [GT, same]}])
    with pytest.raises(DataError, match="nothing is known"):
        load_known_set(path)
    with pytest.raises(DataError, match="not found"):
        load_known_set(tmp_path / "absent.json")


def test_graded_list_pairs(tmp_path: Path) -> None:
    variants = [
        GT,
        {"id": "mild", "rank": 1, "derive": "wrong_name"},
        {"id": "severe", "rank": 2, "derive": "other_page"},
        {"id": "also_severe", "rank": 2, "derive": "shuffled_words"},
    ]
    path = _manifest(tmp_path, [{"id": "a", "instance_id": "x", "tracks": ["text"], "variants": variants}])
    manifest = load_known_set(path)
    pairs = {(p.better, p.worse) for p in manifest.known_pairs()}
    # Every pair with different ranks, and none between the two rank-2 variants.
    assert pairs == {
        ("ground_truth", "mild"),
        ("ground_truth", "severe"),
        ("ground_truth", "also_severe"),
        ("mild", "severe"),
        ("mild", "also_severe"),
    }


class _FakeRunner:
    """A known set whose 'judge' is a table of scores: counts how often it is asked."""

    def __init__(self, tmp_path: Path, scores: dict[str, float]) -> None:
        variants = [GT, {"id": "bad", "rank": 1, "derive": "shuffled_words"}]
        self.source = _manifest(
            tmp_path, [{"id": "a", "instance_id": "x", "tracks": ["text", "image"], "variants": variants}]
        )
        self.manifest: KnownSetManifest = load_known_set(self.source)
        self.scores = scores
        self.asked = 0

    def panel_tracks(self, panel: str) -> dict[str, str | None]:
        return {"text": None, "image": "no vision model here"}

    def identity(self, panel: str) -> dict[str, Any]:
        return {"judge": "j", "model": "m", "revision": "r"}

    def build(self, folder: Path, tracks: Collection[str]) -> dict[str, str]:
        assert list(tracks) == ["text"]  # nothing is built for an unavailable track
        return {"a/ground_truth": "1" * 64, "a/bad": "2" * 64}

    rule = PairRule()

    def judge_variants(
        self,
        panel: str,
        folder: Path,
        items: Sequence[KnownItem],
        tracks: tuple[str, ...],
        *,
        cache_dir: Path,
        progress: Any = None,
    ) -> VariantScores:
        self.asked += 1
        assert [i.id for i in items] == ["a"] and tracks == ("text",)
        scores = {("j", "x", "text", v): VariantScore(s, "ok") for v, s in self.scores.items()}
        return VariantScores(
            scores, judges={"j": {"model": "m", "revision": "r"}}, usage={"j": {"calls": 2}}, model_calls=2
        )


def test_check_runs_once_per_checkpoint_and_rereads_floors(tmp_path: Path) -> None:
    runner = _FakeRunner(tmp_path, {"ground_truth": 9.0, "bad": 2.0})
    first = check_known_set(runner, "demo", cache_dir=tmp_path / "cache")
    assert runner.asked == 1 and first["model_calls"] == 2 and not first["reused"]
    assert first["judges"]["j"]["text"]["accuracy"] == 1.0 and first["passed"]
    assert first["unavailable"] == {"image": "no vision model here"}
    assert first["pins"]["unpinned"] == ["a/ground_truth", "a/bad"]
    assert (tmp_path / "cache" / "meta_eval" / f"{first['key']}.json").is_file()
    again = check_known_set(runner, "demo", cache_dir=tmp_path / "cache", floors=Floors(1.0))
    assert runner.asked == 1 and again["reused"] and again["model_calls"] == 0
    assert again["key"] == first["key"] and again["judges"]["j"]["text"]["floor"] == 1.0


def test_a_tie_fails_the_floor(tmp_path: Path) -> None:
    runner = _FakeRunner(tmp_path, {"ground_truth": 5.0, "bad": 5.0})
    doc = check_known_set(runner, "demo", cache_dir=tmp_path / "cache")
    assert doc["below_floor"] == [
        {"judge": "j", "track": "text", "accuracy": 0.0, "floor": 0.7, "n_pairs": 1}
    ]
    assert not doc["passed"] and "tie" in doc["rule"]


def test_health_section_verdict_reasons_and_mlflow_figures(tmp_path: Path) -> None:
    runner = _FakeRunner(tmp_path, {"ground_truth": 5.0, "bad": 5.0})
    doc = check_known_set(runner, "demo", cache_dir=tmp_path / "cache")
    health = merge_meta_eval(
        {"judges": {}, "degenerate": []}, {"cpu": doc, "broken": {"error": "no set here"}}
    )
    section = health["meta_eval"]
    assert section["judges"]["cpu/j"]["text"]["status"] == "below_floor"
    assert section["below_floor"][0]["judge"] == "cpu/j" and section["panels"]["broken"] == {
        "error": "no set here"
    }
    reasons = meta_eval_failures(health)
    assert reasons == [
        "judge check on the known set could not run for panel broken: no set here",
        "judge cpu/j below its floor on the known set: track text accuracy 0.00 < 0.70 (1 pairs)",
    ]
    metrics, tags = meta_eval_metrics(health)
    assert metrics["meta_eval.cpu.j.text.accuracy"] == 0.0 and metrics["meta_eval.cpu.j.text.passed"] == 0.0
    assert tags["omnieval.meta_eval.below_floor"] == "cpu/j/text"
    assert tags["omnieval.meta_eval.cpu.set_sha256"] == runner.manifest.sha256()
    assert meta_eval_failures(None) == [] and meta_eval_metrics({}) == ({}, {})


def test_probability_weighted_figures_beside_the_greedy_ones() -> None:
    # A coarse judge: greedy 10 vs 10 (a tie, wrong), its own probabilities 9.9 vs 9.7 (right).
    tied = PairVerdict("j", "text", "i", "gt", "bad", 10.0, 10.0, better_expected=9.9, worse_expected=9.7)
    inverted = PairVerdict("j", "text", "k", "gt", "bad", 9.0, 2.0, better_expected=3.0, worse_expected=8.0)
    entry = summarize([tied, inverted], Floors())["j"]["text"]
    assert (entry["accuracy"], entry["ties"]) == (0.5, 1)
    assert entry["expected"] == {"n_pairs": 2, "correct": 1, "ties": 0, "accuracy": 0.5, "agreement": 0.0}
    # Without probabilities on every judged pair there is no weighted figure at all.
    assert "expected" not in summarize([tied, _v(9, 2)], Floors())["j"]["text"]
    metrics, _ = meta_eval_metrics(merge_meta_eval({}, {"cpu": {"judges": {"j": {"text": entry}}}}))
    assert metrics["meta_eval.cpu.j.text.accuracy_expected"] == 0.5


class _TwoTrackRunner:
    """A known set on two tracks whose runner records each call and always ranks the pair right."""

    def __init__(self, tmp_path: Path, rule: PairRule) -> None:
        variants = [GT, {"id": "bad", "rank": 1, "derive": "shuffled_words"}]
        self.source = _manifest(
            tmp_path, [{"id": "a", "instance_id": "x", "tracks": ["text", "image"], "variants": variants}]
        )
        self.manifest = load_known_set(self.source)
        self.rule = rule
        self.calls: list[tuple[str, ...]] = []

    def judge_variants(
        self,
        panel: str,
        folder: Path,
        items: Any,
        tracks: tuple[str, ...],
        *,
        cache_dir: Path,
        progress: Any = None,
    ) -> VariantScores:
        from omnieval.backends.llm import Usage

        self.calls.append(tracks)
        judged = {
            ("j", "x", t, v): VariantScore(s, "ok")
            for t in tracks
            for v, s in (("ground_truth", 9.0), ("bad", 2.0))
        }
        usage = {"j": Usage(calls=1, seconds=0.25).to_json()}
        return VariantScores(
            judged, judges={"j": {"call": len(self.calls)}}, usage=usage, model_calls=1, cache_hits=1
        )


def test_judge_known_set_calls_the_runner_per_track_or_once(tmp_path: Path) -> None:
    apart = _TwoTrackRunner(tmp_path, PairRule())
    got = judge_known_set(apart, "p", tmp_path, cache_dir=tmp_path, tracks={"image", "text"})  # type: ignore[arg-type]
    # Manifest track order, one call each; figures summed, the first call's lineage kept per judge.
    assert apart.calls == [("text",), ("image",)]
    assert [(v.track, v.outcome) for v in got.verdicts] == [("text", "correct"), ("image", "correct")]
    assert (got.model_calls, got.cache_hits, got.judges) == (2, 2, {"j": {"call": 1}})
    assert (got.usage["j"]["calls"], got.usage["j"]["seconds"]) == (2, 0.5)
    together = _TwoTrackRunner(tmp_path, PairRule(tracks_apart=False))
    one = judge_known_set(together, "p", tmp_path, cache_dir=tmp_path, tracks=["image", "text"])  # type: ignore[arg-type]
    assert together.calls == [("text", "image")] and one.usage["j"]["calls"] == 1
    assert [v.track for v in one.verdicts] == ["text", "image"]
