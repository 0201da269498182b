"""judge_expected rows: the judges' probability-weighted scores next to the greedy ones."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from judge_fixtures import NARRATIONS, Story, fake_describe

from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval.judges import TRACKS, run_judges
from omnieval.judges._parse import expected_score
from omnieval.scores import SCORE_COLUMNS

REFERENCES = [n for _, n in NARRATIONS]
# By hand from judge_scripts.with_probs: 9 -> .25*8 + .5*9 + .25*10 = 9; 6 -> 6;
# 1 -> .75*1 + .25*2 = 1.25 (the lower neighbour is clipped onto 1); 10 -> .25*9 + .75*10 = 9.75.
EXPECTED = (9.0, 6.0, 1.25, 9.75)


def _panel(tmp_path: Path, script: str, *, value_probs: bool) -> Path:
    judge = textwrap.dedent(
        f"""\
        id: probs-judge
        model: scripted/{script}
        backend: {{kind: scripted, script: "judge_scripts:{script}", value_probs: {str(value_probs).lower()}}}
        decoding: {{temperature: 0.0, max_tokens: 128}}
        framing: {{schema_constrained: true}}
        """
    )
    item = textwrap.indent(judge, "        ").lstrip()
    body = (
        "name: probs\ntracks:\n"
        f"  text:\n    judges:\n      - {item}\n"
        f"  speech:\n    input: cascade\n    judges:\n      - {item}\n"
        "  image:\n    unavailable: no vision model in tests\n"
    )
    path = tmp_path / f"panel-{script}-{value_probs}.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def _run(story: Story, panel: Path, cache: Path, *, partial: bool = False):  # type: ignore[no-untyped-def]
    texts: list[str | None] = [REFERENCES[0], None, REFERENCES[2]] if partial else list(REFERENCES)
    systems = {"oracle": story.candidates("oracle", texts)}
    return run_judges(
        story.transitions, systems, panel=str(panel), cache_dir=cache, describe_audio=fake_describe
    )


def test_expected_score_by_hand() -> None:
    assert expected_score({9: 0.25, 10: 0.75}) == pytest.approx(9.75)
    # Renormalized over the valid scores: mass outside 1-10 is dropped, not counted as 0.
    assert expected_score({2: 0.2, 4: 0.2, 11: 0.6}) == pytest.approx(3.0)
    assert expected_score({}) is None
    assert expected_score({5: 0.0}) is None


def test_rows_next_to_every_greedy_row(story: Story, tmp_path: Path) -> None:
    result = _run(story, _panel(tmp_path, "with_probs", value_probs=True), tmp_path / "cache", partial=True)
    scores = result.scores
    assert list(scores.columns) == list(SCORE_COLUMNS)
    greedy = scores[scores.component == "judge"]
    weighted = scores[scores.component == "judge_expected"]
    keys = ["system", "instance_id", "index", "track", "judge", "panel", "criterion"]
    # One judge_expected row per greedy row of a judge that reports probabilities (not the image
    # track, which has no judge here).
    judged = greedy[greedy.judge != "unavailable"]
    assert len(weighted) == len(judged) == 3 * 2 * 4
    merged = judged.merge(weighted, on=keys, suffixes=("", "_e"), validate="one_to_one")
    assert (merged["status"] == merged["status_e"]).all()
    ok = merged[merged.status == "ok"]
    for track_name in ("text", "speech"):
        rows = ok[ok.track == track_name].set_index("criterion")
        for criterion, want in zip(TRACKS[track_name].criteria, EXPECTED, strict=True):
            values = rows.loc[[criterion], "value_e"].tolist()
            assert values == pytest.approx([want] * len(values)) and values
    # The missing narration (index 1): same status as the greedy row, no value.
    missing = merged[(merged.track == "text") & (merged["index"] == 1)]
    assert set(missing["status_e"]) == {"missing_output"} and missing["value_e"].isna().all()
    assert set(scores[scores.track == "image"]["component"]) == {"judge"}
    record = result.judgments[(result.judgments.track == "text") & (result.judgments["index"] == 0)].iloc[0]
    assert json.loads(record["expected_scores"]) == dict(zip(TRACKS["text"].criteria, EXPECTED, strict=True))


def test_cache_keeps_the_probabilities(story: Story, tmp_path: Path) -> None:
    panel = _panel(tmp_path, "with_probs", value_probs=True)
    first = _run(story, panel, tmp_path / "cache")
    second = _run(story, panel, tmp_path / "cache")
    assert first.model_calls > 0 and second.model_calls == 0 and second.cache_hits == first.model_calls
    pd.testing.assert_frame_equal(first.scores, second.scores)


def test_no_probabilities_means_not_applicable_never_the_greedy_score(story: Story, tmp_path: Path) -> None:
    result = _run(story, _panel(tmp_path, "by_reference", value_probs=True), tmp_path / "cache")
    weighted = result.scores[result.scores.component == "judge_expected"]
    assert len(weighted) == 3 * 2 * 4
    assert set(weighted["status"]) == {"not_applicable"} and weighted["value"].isna().all()


def test_backends_without_probabilities_add_no_rows(story: Story, tmp_path: Path) -> None:
    result = _run(story, _panel(tmp_path, "by_reference", value_probs=False), tmp_path / "cache")
    assert set(result.scores["component"]) == {"judge"}


def test_aggregate_ignores_judge_expected(story: Story, tmp_path: Path) -> None:
    result = _run(story, _panel(tmp_path, "with_probs", value_probs=True), tmp_path / "cache", partial=True)
    scores = result.scores
    only_greedy = scores[scores.component != "judge_expected"].reset_index(drop=True)
    with_expected = aggregate(scores).to_dict()
    assert with_expected == aggregate(only_greedy).to_dict()
    text = with_expected["systems"]["oracle"]["valid_only"]["judge.text"]
    assert text == pytest.approx(sum((9, 6, 1, 10)) / 4)  # the greedy scores, not the weighted ones
