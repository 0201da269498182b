"""Slow drift (``omnieval trend``, the nightly's trend.json): the CUSUM and its MLflow history."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnieval.cli import main
from omnieval.compare import CusumParams, component_direction, cusum, nightly_trend
from omnieval.config import SuiteConfig

DAY_MS = 86_400_000
START_MS = 1_780_000_000_000
KEY = "storybench.valid_only.total_average"

# The documented defaults' promises (CusumParams, docs/nightly.md "Slow drift").
DETECTED_BY_NIGHT = 14
DETECTED_WITHIN_AFTER_REFERENCE = 9


def _drift(seed: int, nights: int, *, start: int = 0, step: float = 0.2, sd: float = 0.1) -> np.ndarray:
    """7.0 points, ``step`` worse each night from night ``start`` (0-based) on, plus noise."""
    rng = np.random.default_rng(seed)
    k = np.arange(nights)
    return 7.0 - step * np.maximum(0, k - start) + rng.normal(0.0, sd, nights)


def _ever_flagged(values: np.ndarray) -> bool:
    result = cusum(values)
    return max(max(result.worse), max(result.better)) > result.threshold


# -- the detector --------------------------------------------------------------------------------------


def test_cusum_matches_a_hand_computation() -> None:
    # Reference nights 5, 5+a, 5: median 5; differences a, -a, MAD a, so sigma = 1.4826 a / sqrt 2 = 1.
    a = math.sqrt(2.0) / 1.4826
    series = [5.0, 5.0 + a, 5.0, 4.0, 3.0, 6.0, 2.0, 2.0]
    params = CusumParams(reference_nights=3, slack=0.5, threshold=2.0, min_scale=1e-6)
    result = cusum(series, params=params)
    # Higher is better, so z = -(x - 5) = 1, 2, -1, 3, 3 on nights 4-8:
    # worse  = 0.5, 2.0, 0.5, 3.0, 5.5   (w + z - 0.5, floored at 0)
    # better = 0,   0,   0.5, 0,   0     (b - z - 0.5, floored at 0)
    assert result.reference == pytest.approx(5.0)
    assert result.scale == pytest.approx(1.0)
    assert result.worse == pytest.approx((0, 0, 0, 0.5, 2.0, 0.5, 3.0, 5.5))
    assert result.better == pytest.approx((0, 0, 0, 0, 0, 0.5, 0, 0))
    assert result.shift_detected and result.direction == "worse"
    assert result.statistic == pytest.approx(5.5) and result.threshold == 2.0
    # Above h from night index 6 on (2.0 at index 4 is not above 2.0); positive since index 3.
    assert (result.detected_at, result.since) == (6, 3)

    # Lower is better: the same deviations count the other way round.
    flipped = cusum(series, lower_is_better=True, params=params)
    assert flipped.better == pytest.approx(result.worse)
    assert flipped.worse == pytest.approx(result.better)
    assert flipped.direction == "better" and (flipped.detected_at, flipped.since) == (6, 3)


def test_cusum_carries_over_a_missing_night_and_needs_enough_history() -> None:
    a = math.sqrt(2.0) / 1.4826
    params = CusumParams(reference_nights=3, slack=0.5, threshold=2.0, min_scale=1e-6)
    gap = cusum([5.0, 5.0 + a, 5.0, 4.0, math.nan, 3.0], params=params)
    assert gap.worse == pytest.approx((0, 0, 0, 0.5, 0.5, 2.0))
    assert not gap.shift_detected and gap.direction is None and gap.statistic == pytest.approx(2.0)

    short = cusum([5.0, 5.1, 5.2], params=params)
    assert short.note is not None and "more than 3 nights" in short.note
    assert not short.shift_detected and short.reference is None


def test_a_history_that_never_moved_is_not_flagged_for_a_rounding_change() -> None:
    values = [7.25] * 20 + [7.251, 7.249, 7.252]
    result = cusum(values)
    assert result.scale == CusumParams().min_scale
    assert not result.shift_detected and max(result.worse) == 0.0


def test_a_slow_drift_inside_the_tolerance_is_flagged_within_the_stated_nights() -> None:
    # Every night 0.2 points worse: inside a nightly tolerance of 0.5 on every step of the mean.
    for seed in range(200):
        from_first = cusum(_drift(seed, 30))
        assert from_first.shift_detected and from_first.direction == "worse", seed
        assert from_first.detected_at is not None and from_first.detected_at + 1 <= DETECTED_BY_NIGHT
        later = cusum(_drift(seed, 30, start=10))
        assert later.direction == "worse" and later.detected_at is not None
        assert later.detected_at + 1 - 10 <= DETECTED_WITHIN_AFTER_REFERENCE
        assert later.since is not None and later.since >= 10


def test_a_rising_error_rate_is_a_worse_drift() -> None:
    wer = 20.0 + 0.2 * np.arange(30) + np.random.default_rng(3).normal(0, 0.1, 30)
    assert cusum(wer, lower_is_better=True).direction == "worse"
    assert cusum(wer).direction == "better"


def test_false_alarm_rate_of_a_flat_history_over_60_nights() -> None:
    # Measured on fixed seeds; the numbers are the ones CusumParams and docs/nightly.md state.
    seeds = range(10_000, 10_500)
    at_tenth = [_ever_flagged(7.0 + np.random.default_rng(s).normal(0, 0.1, 60)) for s in seeds]
    unfloored = [_ever_flagged(7.0 + np.random.default_rng(s).normal(0, 1.0, 60)) for s in seeds]
    assert np.mean(at_tenth) == pytest.approx(0.014, abs=1e-9)
    assert np.mean(unfloored) == pytest.approx(0.046, abs=1e-9)
    assert np.mean(unfloored) < 0.05


def test_component_direction_reads_the_benchmark() -> None:
    from omnieval.benchmarks import get_benchmark

    acbench = get_benchmark("acbench")
    lower = component_direction(acbench.lower_is_better, "acbench")
    assert lower("acbench.original.wer") and lower("acbench.oracle.per")
    assert not lower("acbench.original.emotion_accuracy")
    story = get_benchmark("storybench")
    assert not component_direction(story.lower_is_better, "storybench")(KEY)


# -- the MLflow history and the command ----------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # A real MLflow file store: created in milliseconds, where a sqlite store takes seconds.
    root = tmp_path_factory.mktemp("mlruns")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        mp.setenv("MLFLOW_TRACKING_URI", root.as_uri())
        yield root


def _log_history(
    experiment: str,
    series: dict[str, np.ndarray],
    *,
    failed_at: int | None = None,
    starts_ms: list[int] | None = None,
) -> list[str]:
    """One finished parent run per night with the metric keys the track stage logs (a day apart,
    from START_MS, unless ``starts_ms`` gives each run's start)."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    from omnieval.tracking import tracking_uri

    client = MlflowClient(tracking_uri())
    exp = client.create_experiment(experiment)
    nights = len(next(iter(series.values())))
    ids = []
    for k in range(nights):
        run = client.create_run(
            exp,
            start_time=START_MS + k * DAY_MS if starts_ms is None else starts_ms[k],
            tags={"omnieval.kind": "suite", "omnieval.suite": experiment, "omnieval.benchmark": "storybench"},
        )
        metrics = [Metric(f"{system}/{KEY}", float(v[k]), 0, 0) for system, v in series.items()]
        # A non-headline parent metric (e.g. a gate count) is not followed.
        metrics.append(Metric("gate.scores.rows", 100.0 + k, 0, 0))
        client.log_batch(run.info.run_id, metrics=metrics)
        client.set_terminated(run.info.run_id, status="FAILED" if k == failed_at else "FINISHED")
        ids.append(run.info.run_id)
    return ids


def test_trend_command_flags_the_drifting_system_only(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    drifting = _drift(7, 31)
    flat = 6.0 + np.random.default_rng(8).normal(0, 0.1, 31)
    # Night 5 failed at a gate: not a night of the history (the window is 30 finished runs).
    ids = _log_history("omnieval/drifty", {"alpha": drifting, "beta": flat}, failed_at=5)

    out = tmp_path / "trend"
    assert main(["trend", "--suite", "drifty", "--json", "--out", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nights"] == 30 and ids[5] not in [r["run_id"] for r in doc["runs"]]
    by_system = {c["system"]: c for c in doc["components"]}
    assert set(by_system) == {"alpha", "beta"}
    alpha, beta = by_system["alpha"], by_system["beta"]
    assert alpha["component"] == KEY and alpha["lower_is_better"] is False
    assert alpha["shift_detected"] is True and alpha["direction"] == "worse"
    assert alpha["detected_night"] <= DETECTED_BY_NIGHT
    assert alpha["statistic"] > alpha["threshold"] == CusumParams().threshold
    assert beta["shift_detected"] is False and beta["direction"] is None
    assert doc["reasons"] == [
        f"slow drift: alpha {KEY} worse for {30 - alpha['since_night'] + 1} nights (CUSUM)"
    ]
    assert doc["method"]["reference_nights"] == 10
    assert (out / "trend.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "trend.json").read_text())["components"] == doc["components"]

    assert main(["trend", "--suite", "drifty", "--nights", "12"]) == 0
    text = capsys.readouterr().out
    assert "12 nights" in text and "alpha" in text and "beta" in text and "threshold" in text


def test_trend_command_bad_input_exits_2(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["trend", "--suite", "nosuchsuite"]) == 2
    err = capsys.readouterr().err
    assert "no experiment 'omnieval/nosuchsuite'" in err and "Traceback" not in err

    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.chdir(tmp_path)
    assert main(["trend", "--suite", "drifty"]) == 2
    assert "no MLflow store" in capsys.readouterr().err
    assert not (tmp_path / "mlflow").exists()


def test_nightly_hook_adds_the_drift_to_the_verdict(store: Path, tmp_path: Path) -> None:
    config = SuiteConfig.model_validate(
        {
            "suite": "nightdrift",
            "systems": {"alpha": {"kind": "oracle"}, "beta": {"kind": "oracle"}},
            "runs_dir": str(tmp_path / "runs"),
            "state_dir": str(tmp_path / "state"),
        }
    )
    drifting, flat = _drift(11, 30), 6.0 + np.random.default_rng(12).normal(0, 0.1, 30)
    _log_history(config.experiment, {"alpha": drifting[:29], "beta": flat[:29]})
    # Tonight's values come from the report stage's leaderboard (MLflow gets them after the verdict).
    board: dict[str, Any] = {
        "mlflow_metrics": {
            "alpha": {KEY: float(drifting[29]), "storybench.valid_only.bertscore_f1": 0.5},
            "beta": {KEY: float(flat[29])},
        }
    }
    (tmp_path / "state" / "report").mkdir(parents=True)
    (tmp_path / "state" / "report" / "leaderboard.json").write_text(json.dumps(board))
    folder = tmp_path / "runs" / "nightdrift" / "tonight"
    folder.mkdir(parents=True)
    document: dict[str, Any] = {"verdict": "GO", "reasons": ["no test is worse"]}

    nightly_trend(config, folder, run_id="tonight", document=document)

    assert document["verdict"] == "GO" and document["reasons"][0] == "no test is worse"
    drift_lines = document["reasons"][1:]
    assert len(drift_lines) == 1 and drift_lines[0].startswith(f"slow drift: alpha {KEY} worse for ")
    assert drift_lines[0].endswith(" nights (CUSUM)")
    assert document["trend"] == {
        "file": "trend.json",
        "figure": "report_trend.png",
        "drifting_worse": drift_lines,
    }
    saved = json.loads((folder / "trend.json").read_text())
    assert saved["nights"] == 30 and saved["runs"][-1]["run_id"] == "tonight"
    assert (folder / "report_trend.png").is_file()


def test_nightly_hook_without_history_leaves_the_verdict_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    config = SuiteConfig.model_validate(
        {"suite": "fresh", "systems": {"alpha": {"kind": "oracle"}}, "state_dir": str(tmp_path / "state")}
    )
    document: dict[str, Any] = {"verdict": "GO", "reasons": ["no previous run to compare with"]}
    nightly_trend(config, tmp_path, run_id="r1", document=document)
    assert document == {"verdict": "GO", "reasons": ["no previous run to compare with"]}
    assert not (tmp_path / "trend.json").exists() and not (tmp_path / "mlflow").exists()


def test_nightly_hook_on_a_first_night_writes_the_state_but_no_picture(store: Path, tmp_path: Path) -> None:
    config = SuiteConfig.model_validate(
        {
            "suite": "firstnight",
            "systems": {"alpha": {"kind": "oracle"}},
            "state_dir": str(tmp_path / "state"),
        }
    )
    (tmp_path / "state" / "report").mkdir(parents=True)
    (tmp_path / "state" / "report" / "leaderboard.json").write_text(
        json.dumps({"mlflow_metrics": {"alpha": {KEY: 7.0}}})
    )
    document: dict[str, Any] = {"verdict": "GO", "reasons": ["no previous run to compare with"]}
    nightly_trend(config, tmp_path, run_id="r1", document=document)
    assert document["reasons"] == ["no previous run to compare with"]
    assert document["trend"] == {"file": "trend.json", "figure": None, "drifting_worse": []}
    (component,) = json.loads((tmp_path / "trend.json").read_text())["components"]
    assert component["shift_detected"] is False and "needs more than 10 nights" in component["note"]
    assert not (tmp_path / "report_trend.png").exists()


def test_trend_command_takes_a_suite_yaml(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _log_history("team/custom-experiment", {"alpha": 7.0 + np.random.default_rng(5).normal(0, 0.1, 12)})
    suite = tmp_path / "custom.yaml"
    suite.write_text(
        "suite: custom\nsystems: {alpha: {kind: oracle}}\ntracking: {experiment: team/custom-experiment}\n"
    )
    assert main(["trend", "--suite", str(suite), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["suite"] == "custom" and doc["experiment"] == "team/custom-experiment"
    assert doc["nights"] == 12 and doc["components"][0]["shift_detected"] is False
    assert doc["reasons"] == []


# -- one night per day, the note in its own column ------------------------------------------------------

HOUR_MS = 3_600_000


def test_runs_of_one_day_are_one_night_the_latest(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Twelve days; on day 3 the suite ran three times (the 14:00 and 20:00 reruns after the 02:00
    # night), on day 7 twice. Each day counts once, with its latest run's value.
    days = list(range(12))
    midnight = START_MS - START_MS % DAY_MS  # 00:00 UTC
    starts = [midnight + d * DAY_MS + 2 * HOUR_MS for d in days]
    values = [7.0 + 0.01 * d for d in days]
    reruns = [(3, 14, 1.0), (3, 20, 2.0), (7, 23, 3.0)]
    for day, hour, value in reruns:
        starts.append(midnight + day * DAY_MS + hour * HOUR_MS)
        values.append(value)
    ids = _log_history("omnieval/reruns", {"alpha": np.array(values)}, starts_ms=starts)

    assert main(["trend", "--suite", "reruns", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nights"] == 12
    latest = {day: ids[day] for day in days} | {3: ids[13], 7: ids[14]}
    assert [r["run_id"] for r in doc["runs"]] == [latest[d] for d in days]
    (alpha,) = doc["components"]
    expected = [7.0 + 0.01 * d for d in days]
    expected[3], expected[7] = 2.0, 3.0
    assert alpha["values"] == pytest.approx(expected)

    # --nights counts days, not runs: the last 5 days hold 6 runs.
    assert main(["trend", "--suite", "reruns", "--json", "--nights", "5"]) == 0
    five = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in five["runs"]] == [latest[d] for d in days[-5:]]


def test_one_per_day_reads_the_day_in_the_suites_time_zone() -> None:
    from datetime import UTC, datetime

    from omnieval.compare._trend import Night, one_per_day

    # 23:30 UTC on the 3rd is the 4th in Paris: two nights in UTC, one (the later run) in Paris.
    a = Night("a", datetime(2026, 12, 3, 23, 30, tzinfo=UTC), {})
    b = Night("b", datetime(2026, 12, 4, 1, 0, tzinfo=UTC), {})
    assert [n.run_id for n in one_per_day([b, a])] == ["a", "b"]
    assert [n.run_id for n in one_per_day([b, a], "Europe/Paris")] == ["b"]


def test_the_not_enough_nights_note_has_its_own_column(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _log_history("omnieval/short", {"alpha": np.array([7.0, 7.1, 7.2])})
    assert main(["trend", "--suite", "short"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("system"))
    row = next(line for line in lines if line.startswith("alpha"))
    assert header.split() == [
        "system",
        "component",
        "statistic",
        "threshold",
        "shift",
        "direction",
        "detected",
        "since",
        "note",
    ]
    cells = row.split(maxsplit=8)
    assert cells[:8] == ["alpha", KEY, "-", "10", "no", "-", "-", "-"]
    assert cells[8] == "needs more than 10 nights with a value, has 3"
    # Column by column: the note starts where the header's note does.
    assert row.index("needs more") == header.index("note")


def test_nightly_hook_lets_tonight_replace_an_earlier_run_of_the_day(store: Path, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    config = SuiteConfig.model_validate(
        {"suite": "rerun", "systems": {"alpha": {"kind": "oracle"}}, "state_dir": str(tmp_path / "state")}
    )
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    # Yesterday, and earlier today (at midnight UTC, before tonight's run).
    midnight_ms = now_ms - now_ms % DAY_MS
    ids = _log_history(
        config.experiment,
        {"alpha": np.array([7.0, 6.0])},
        starts_ms=[midnight_ms - DAY_MS, midnight_ms],
    )
    (tmp_path / "state" / "report").mkdir(parents=True)
    (tmp_path / "state" / "report" / "leaderboard.json").write_text(
        json.dumps({"mlflow_metrics": {"alpha": {KEY: 7.5}}})
    )
    document: dict[str, Any] = {"verdict": "GO", "reasons": []}
    nightly_trend(config, tmp_path, run_id="tonight", document=document)
    saved = json.loads((tmp_path / "trend.json").read_text())
    assert [r["run_id"] for r in saved["runs"]] == [ids[0], "tonight"]
    assert saved["components"][0]["values"] == [7.0, 7.5]
