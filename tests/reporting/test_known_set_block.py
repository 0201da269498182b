"""The report's judge section shows the known-set check from health.json."""

from __future__ import annotations

from omnieval.reporting import judge_health_block, known_set_block

SECTION = {
    "judges": {
        "cpu/j": {
            "text": {
                "status": "below_floor",
                "n_pairs": 12,
                "correct": 3,
                "ties": 8,
                "accuracy": 0.25,
                "agreement": 0.08,
                "floor": 0.7,
            },
            "speech": {
                "status": "ok",
                "n_pairs": 8,
                "correct": 8,
                "ties": 0,
                "accuracy": 1.0,
                "agreement": 1.0,
                "floor": 0.7,
            },
        }
    },
    "below_floor": [{"judge": "cpu/j", "track": "text", "accuracy": 0.25, "floor": 0.7, "n_pairs": 12}],
    "panels": {
        "cpu": {
            "set": {"name": "storybench-known", "sha256": "ab" * 32, "pairs": 20},
            "model_calls": 28,
            "unavailable": {"image": "no vision model <here>"},
        },
        "other": {"error": "dataset lacks the set's instances"},
    },
    "rule": "accuracy counts a tie as wrong",
}


def test_block_flags_judges_below_their_floor() -> None:
    html = known_set_block(SECTION)
    assert "BELOW FLOOR" in html and "cpu/j on text (accuracy 0.25 &lt; 0.70)" in html
    assert "<td>0.25</td>" in html and "<td>+0.08</td>" in html and "<td>1.00</td>" in html
    assert (
        "storybench-known" in html
        and "28 model calls" in html
        and "image (no vision model &lt;here&gt;)" in html
    )
    assert "panel other: the check could not run: dataset lacks" in html and "a tie as wrong" in html
    assert known_set_block(None) == ""


def test_the_health_block_carries_it() -> None:
    health = {"judges": {}, "degenerate": [], "meta_eval": SECTION}
    assert "Judges on the known set" in judge_health_block(health)
    passing = {
        **SECTION,
        "below_floor": [],
        "judges": {"cpu/j": {"speech": SECTION["judges"]["cpu/j"]["speech"]}},
    }
    assert "BELOW FLOOR" not in known_set_block(passing)
    assert "Judges on the known set" not in judge_health_block({"judges": {}, "degenerate": []})
