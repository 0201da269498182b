"""What the judge stage says it called: this run's model calls, told apart from a reused output's."""

from __future__ import annotations

import json
from pathlib import Path

from omnieval.stages.judge import _record_this_run


def _lineage(folder: Path) -> dict[str, object]:
    document = {"panels": {"cpu": {"model_calls": 120, "cache_hits": 0}}, "model_calls": 120}
    (folder / "lineage.json").write_text(json.dumps(document), encoding="utf-8")
    return document


def test_a_reused_judge_output_made_no_calls_in_this_run(tmp_path: Path) -> None:
    _lineage(tmp_path)
    _record_this_run(tmp_path, reused=True, panel_calls=0, panel_hits=0, drift_calls=6, drift_panel="cpu")
    doc = json.loads((tmp_path / "lineage.json").read_text(encoding="utf-8"))
    # The output's own count stays (it says how the reused output was made); this run made none
    # of those, only the drift check's six.
    assert doc["panels"]["cpu"]["model_calls"] == 120
    assert doc["panels"]["cpu"]["this_run"] == {
        "output_reused": True,
        "model_calls": 0,
        "drift_anchor_model_calls": 6,
    }
    assert doc["this_run"]["model_calls"] == 6 and doc["this_run"]["panel_model_calls"] == 0


def test_a_fresh_judge_output_counts_the_calls_made_now(tmp_path: Path) -> None:
    _lineage(tmp_path)
    _record_this_run(
        tmp_path,
        reused=False,
        panel_calls=100,  # 20 came with a shard finished before a kill
        panel_hits=20,
        drift_calls=0,
        drift_panel=None,
        by_panel={"cpu": 100},
    )
    doc = json.loads((tmp_path / "lineage.json").read_text(encoding="utf-8"))
    assert doc["panels"]["cpu"]["this_run"] == {"output_reused": False, "model_calls": 100}
    assert doc["this_run"] == {
        "output_reused": False,
        "panel_model_calls": 100,
        "panel_cache_hits": 20,
        "drift_model_calls": 0,
        "model_calls": 100,
    }


def test_a_panel_file_edited_in_place_changes_the_judge_key(tmp_path: Path) -> None:
    from omnieval.stages.judge import _panel_identity

    panel = tmp_path / "mine.yaml"
    panel.write_text("name: mine\nsystem_prefix: Be short.\n", encoding="utf-8")
    before = _panel_identity(str(panel))
    panel.write_text("name: mine\nsystem_prefix: Be brief.\n", encoding="utf-8")
    assert _panel_identity(str(panel)) != before
    # A shipped panel is named: its YAML is package code, covered by the code digest.
    assert _panel_identity("cpu") == "cpu"
