"""check_headline_values on real run folders: it accepts each run's own leaderboard, rejects a
doctored one naming the value that differs, and fails when an aggregation bug is planted in the
package (monkeypatched here) even where the run's own records are all valid.

``runs/<benchmark>/`` holds the scores.parquet and leaderboard.json (prism: and config.resolved.yaml)
of real runs of the e2e modules' configurations, made with ``omnieval run`` at commit c9feafc (the
shipped suites cut as tests/e2e cuts them: storybench oracle + shuffled on 2 transitions with the
packaged CPU judge; prism ground-truth + swapped-audio on one clip per subset with the cpu-cascade
judge; acbench oracle-control + neutral, original and oracle, on the first 14 instances).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests._reference import REL_TOL, HeadlineMismatch, check_headline_values

RUNS = Path(__file__).resolve().parent / "runs"

Board = dict[str, Any]


def _copy(benchmark: str, tmp_path: Path) -> Path:
    folder = tmp_path / benchmark
    shutil.copytree(RUNS / benchmark, folder)
    return folder


def _doctor(folder: Path, edit: Callable[[Board], None]) -> Path:
    board = json.loads((folder / "leaderboard.json").read_text())
    edit(board)
    (folder / "leaderboard.json").write_text(json.dumps(board))
    return folder


@pytest.mark.parametrize("benchmark", ["storybench", "prism", "acbench"])
def test_a_real_runs_own_leaderboard_passes(benchmark: str, tmp_path: Path) -> None:
    assert check_headline_values(_copy(benchmark, tmp_path)) >= 20


def _scale(entry: dict[str, Any], key: str, factor: float) -> None:
    entry[key] = entry[key] * factor


STORYBENCH_EDITS: dict[str, tuple[Callable[[Board], None], str]] = {
    "total off by 1e-5": (
        lambda b: _scale(b["systems"]["oracle"]["zero_filled"], "total_average", 1 + 10 * REL_TOL),
        "oracle/zero_filled/total_average",
    ),
    "a computed component reported null": (
        lambda b: b["systems"]["shuffled"]["valid_only"].update(bertscore_f1=None),
        "shuffled/valid_only/bertscore_f1: leaderboard None",
    ),
    "a judge track off": (
        lambda b: _scale(b["systems"]["shuffled"]["valid_only"], "judge.speech", 1.01),
        "shuffled/valid_only/judge.speech",
    ),
    "a not-computed component given a value": (
        lambda b: b["systems"]["oracle"]["valid_only"].update({"judge.image": 5.0}),
        "oracle/valid_only/judge.image: leaderboard 5.0, reference None",
    ),
    "the total's coverage": (
        lambda b: b["systems"]["oracle"]["valid_only"]["total_average_components"].pop(),
        "oracle/valid_only/total_average_components",
    ),
    "a system left out": (lambda b: b["systems"].pop("shuffled"), "systems: leaderboard has ['oracle']"),
}


@pytest.mark.parametrize("case", list(STORYBENCH_EDITS))
def test_storybench_doctored_leaderboards_are_rejected(case: str, tmp_path: Path) -> None:
    edit, message = STORYBENCH_EDITS[case]
    folder = _doctor(_copy("storybench", tmp_path), edit)
    with pytest.raises(HeadlineMismatch, match=r"in 1 of \d+ values") as info:
        check_headline_values(folder)
    assert message in str(info.value)


def test_differences_within_the_tolerance_pass(tmp_path: Path) -> None:
    def nudge(board: Board) -> None:
        for system in board["systems"].values():
            for policy in ("valid_only", "zero_filled"):
                _scale(system[policy], "total_average", 1 + REL_TOL / 10)

    assert check_headline_values(_doctor(_copy("storybench", tmp_path), nudge)) > 0


def _first_cell(board: Board, system: str) -> dict[str, Any]:
    entry = board["systems"][system]["subsets"]["on_screen"]
    return entry["cells"]["audio_quality"]


PRISM_EDITS: dict[str, tuple[Callable[[Board], None], str]] = {
    "a calibrated cell": (
        lambda b: _scale(_first_cell(b, "swapped-audio"), "speech", 1.001),
        "swapped-audio/on_screen/cells/audio_quality/speech",
    ),
    "a dimension total": (
        lambda b: _scale(
            b["systems"]["ground-truth"]["subsets"]["mixed"]["dimensions"], "prompt_following", 0.9
        ),
        "ground-truth/mixed/dimensions/prompt_following",
    ),
    "a final": (
        lambda b: _scale(b["systems"]["swapped-audio"]["subsets"]["off_screen"], "final", 1.0001),
        "swapped-audio/off_screen/final",
    ),
    "the ground truth's global mean": (
        lambda b: _scale(b["ground_truth"]["subsets"]["on_screen"]["cells"]["av_coherence"], "speech", 1.1),
        "ground_truth/on_screen/cells/av_coherence/speech",
    ),
    "an active cell left out": (
        lambda b: _first_cell(b, "ground-truth").pop("speech"),
        "ground-truth/on_screen/audio_quality audio types",
    ),
}


@pytest.mark.parametrize("case", list(PRISM_EDITS))
def test_prism_doctored_leaderboards_are_rejected(case: str, tmp_path: Path) -> None:
    edit, message = PRISM_EDITS[case]
    folder = _doctor(_copy("prism", tmp_path), edit)
    with pytest.raises(HeadlineMismatch) as info:
        check_headline_values(folder)
    assert message in str(info.value)


ACBENCH_EDITS: dict[str, tuple[Callable[[Board], None], str]] = {
    "a metric not computed reported as 0": (
        lambda b: b["systems"]["neutral"]["conditions"]["original"].update(emotion_accuracy=0.0),
        "neutral/original/emotion_accuracy: leaderboard 0.0, reference None",
    ),
    "a wrong instance count": (
        lambda b: b["systems"]["oracle-control"]["conditions"]["oracle"].update(n=13),
        "oracle-control/oracle/n: leaderboard 13, reference 14",
    ),
    "a WER off": (
        lambda b: _scale(b["systems"]["oracle-control"]["conditions"]["original"], "wer", 1.0001),
        "oracle-control/original/wer",
    ),
    "delta-WPM with the sign flipped": (
        lambda b: _scale(b["systems"]["oracle-control"]["conditions"]["oracle"], "delta_wpm", -1.0),
        "oracle-control/oracle/delta_wpm",
    ),
    "a condition left out": (
        lambda b: b["systems"]["neutral"]["conditions"].pop("oracle"),
        "neutral conditions: leaderboard has ['original']",
    ),
}


@pytest.mark.parametrize("case", list(ACBENCH_EDITS))
def test_acbench_doctored_leaderboards_are_rejected(case: str, tmp_path: Path) -> None:
    edit, message = ACBENCH_EDITS[case]
    folder = _doctor(_copy("acbench", tmp_path), edit)
    with pytest.raises(HeadlineMismatch) as info:
        check_headline_values(folder)
    assert message in str(info.value)


def test_prism_reads_the_suites_diagnostic_systems(tmp_path: Path) -> None:
    """Counting swapped-audio as a system under test (``diagnostic: false``) changes the global
    ground-truth mean the reference calibrates with, so the run's leaderboard no longer agrees."""
    folder = _copy("prism", tmp_path)
    config = yaml.safe_load((folder / "config.resolved.yaml").read_text())
    config["systems"]["swapped-audio"]["diagnostic"] = False
    (folder / "config.resolved.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(HeadlineMismatch, match="ground_truth/"):
        check_headline_values(folder)


# -- planted aggregation bugs: the package's aggregation of the run's table with gaps ------------------


def test_storybench_zero_filled_over_the_valid_count_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's records are all valid, so its own leaderboard cannot tell the policies apart; the
    table with gaps can, and a zero-filled mean over the valid count instead of the instances fails."""
    import numpy as np

    from omnieval.benchmarks.storybench import _aggregate

    def over_the_valid_count(x: Any, policy: str, n: int) -> Any:
        if policy == "valid_only":
            return _aggregate._nanmean(x, axis=1)
        return np.where(np.isfinite(x), x, 0.0).sum(axis=1) / np.maximum(np.isfinite(x).sum(axis=1), 1)

    folder = _copy("storybench", tmp_path)
    assert check_headline_values(folder, gaps=False) > 0  # the run's own leaderboard has no gap
    monkeypatch.setattr(_aggregate, "_mean_over_instances", over_the_valid_count)
    with pytest.raises(HeadlineMismatch) as info:
        check_headline_values(folder)
    lines = str(info.value).splitlines()[1:]
    assert lines and all(
        line.startswith("the package's aggregation of the table with gaps: ") for line in lines
    )
    assert any("/zero_filled/total_average: package " in line for line in lines)
    assert not any("/valid_only/" in line for line in lines)


def test_acbench_missing_output_counted_as_zero_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing output must leave numerator and denominator alike; counting it as a 0 (a perfect
    WER, a 0 WPM) fails on the table with gaps."""
    from omnieval.benchmarks.acbench import _aggregate

    original = _aggregate._condition_metrics

    def missing_as_zero(rows: Any) -> Any:
        missing = rows["status"] == "missing_output"
        return original(
            rows.assign(status=rows["status"].mask(missing, "ok"), value=rows["value"].fillna(0.0))
        )

    folder = _copy("acbench", tmp_path)
    monkeypatch.setattr(_aggregate, "_condition_metrics", missing_as_zero)
    with pytest.raises(HeadlineMismatch, match=r"table with gaps: neutral/original/wer: package "):
        check_headline_values(folder)


def test_prism_calibration_with_every_pairing_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The global ground-truth mean must leave out the pairings with diagnostic systems: here the
    run's probe (swapped-audio), beside which the judge scored the mixed clip's AV coherence 4, not 6."""
    from omnieval.benchmarks.prism import _aggregate

    original = _aggregate._calibration_sources

    def every_pairing(gt_cells: Any, probes: frozenset[str], references: frozenset[str]) -> Any:
        return original(gt_cells, frozenset(), frozenset())

    folder = _copy("prism", tmp_path)
    monkeypatch.setattr(_aggregate, "_calibration_sources", every_pairing)
    with pytest.raises(
        HeadlineMismatch, match="table with gaps: ground_truth/mixed/cells/av_coherence/speech"
    ):
        check_headline_values(folder)


def test_with_gaps_loses_one_instance_and_fails_one_judgment_per_judge(tmp_path: Path) -> None:
    import pandas as pd
    from tests._reference._check import with_gaps

    scores = pd.read_parquet(RUNS / "storybench" / "scores.parquet")
    holed = with_gaps(scores)
    changed = holed[holed["status"] != scores["status"]]
    lost = changed[changed["status"] == "missing_output"]
    assert set(lost["system"]) == {"oracle"} and lost["index"].nunique() == 1
    failed = changed[changed["status"] == "parse_error"]
    assert set(failed["system"]) == {"shuffled"} and set(failed["component"]) == {"judge"}
    assert sorted(failed["track"]) == ["speech", "text"]  # one criterion of each judged track
    assert holed.loc[changed.index, "value"].isna().all()
    assert scores["status"].isin(["ok", "not_applicable"]).all()  # the copy only: the run is untouched
