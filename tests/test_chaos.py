"""kill -9 anywhere (reduced): one round of the harness, a SIGKILL aimed at every stage of `omnieval run`.

The full run (four rounds, 24 kills) is ``python -m bench kill``; both print the same figures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.chaos import STAGES, ChaosReport, Kill, _stage_durations, half_written, run_harness

ROOT = Path(__file__).resolve().parents[1]


def test_stage_durations_run_from_each_first_marker_to_the_next() -> None:
    markers = [(1.0, "validate"), (3.0, "generate"), (3.5, "generate"), (4.0, "metrics"), (9.0, "judge")]
    assert _stage_durations(markers, 12.0) == {"validate": 2.0, "generate": 1.0, "metrics": 5.0, "judge": 3.0}


def test_half_written_finds_a_truncated_parquet_and_json(tmp_path: Path) -> None:
    import pandas as pd

    pd.DataFrame({"a": [1, 2, 3]}).to_parquet(tmp_path / "good.parquet")
    whole = (tmp_path / "good.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "cut.json").write_text('{"a": [1, 2', encoding="utf-8")
    (tmp_path / "ok.json").write_text("{}", encoding="utf-8")
    building = tmp_path / "shards" / ".abc123-xyz"  # a shard being built is not final yet
    building.mkdir(parents=True)
    (building / "scores.0.parquet").write_bytes(b"PAR1")
    bad = sorted(Path(line.split(":")[0]).name for line in half_written(tmp_path))
    assert bad == ["cut.json", "cut.parquet"]


def _landed_everywhere(rounds: int = 1) -> list[Kill]:
    return [Kill(r, stage, stage, 0.5) for r in range(rounds) for stage in STAGES]


def test_report_is_ok_only_without_loss_duplicates_or_partial_files() -> None:
    report = ChaosReport(kills=_landed_everywhere(), rounds=1, reference_rows=10)
    assert report.ok
    report.duplicate_calls = 1
    assert not report.ok
    for broken in (
        ChaosReport(kills=_landed_everywhere(), rounds=1, reference_rows=10, records_lost=1),
        ChaosReport(kills=_landed_everywhere(), rounds=1, reference_rows=10, duplicate_rows=1),
        ChaosReport(kills=_landed_everywhere(), rounds=1, reference_rows=10, scores_identical=False),
        ChaosReport(kills=_landed_everywhere(), rounds=1, reference_rows=10, half_written=["x.json"]),
        ChaosReport(kills=_landed_everywhere(), rounds=1, reference_rows=0),
    ):
        assert not broken.ok, broken


def test_report_fails_when_a_kill_does_not_land_in_its_stage() -> None:
    assert not ChaosReport(rounds=1, reference_rows=10).ok  # no kill landed at all
    assert not ChaosReport(rounds=0, reference_rows=10).ok
    missed = ChaosReport(
        kills=_landed_everywhere()[:-1], missed=["round 0: track"], rounds=1, reference_rows=10
    )
    assert not missed.ok and not missed.all_kills_landed
    late = _landed_everywhere()
    late[2] = Kill(0, "metrics", "judge", 9.0)  # aimed at metrics, the run was already judging
    report = ChaosReport(kills=late, rounds=1, reference_rows=10)
    assert not report.ok
    assert "1 landed in a later stage than aimed" in report.lines()[0]
    assert not ChaosReport(kills=_landed_everywhere(), rounds=2, reference_rows=10).ok  # half the kills


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.usefixtures("prefect_api")
@pytest.mark.timeout(1800)  # eight runs of the flow in subprocesses
def test_killing_every_stage_loses_and_duplicates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNIEVAL_PROJECT_ROOT", str(ROOT))
    monkeypatch.chdir(ROOT)
    lines: list[str] = []
    report = run_harness(tmp_path, rounds=1, seed=3, limit=2, echo=lines.append)
    print("\n".join([*lines, *report.lines()]))
    # Every aimed kill lands, each inside the stage it was aimed at: one per stage.
    assert report.missed == [], report.missed
    assert report.kills_per_stage == dict.fromkeys(STAGES, 1), report.kills
    assert report.all_kills_landed
    assert report.reference_rows > 0
    assert report.records_lost == 0 and report.duplicate_rows == 0
    assert report.duplicate_calls == 0
    assert report.scores_identical, report.score_mismatches
    assert report.half_written == []
    assert report.judge_calls > 0
    assert report.ok


@pytest.mark.slow
@pytest.mark.e2e
def test_sigterm_stops_the_run_and_every_process_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kill PID` / `timeout`: exit 143, and the run's own Prefect server does not outlive it."""
    import os
    import signal
    import time

    import psutil
    from bench.chaos import CALL_LOG_ENV, DELAY_ENV, _start, write_suite

    monkeypatch.chdir(ROOT)
    suite = write_suite(tmp_path, "sigterm", limit=2, dataset=ROOT / "data" / "storybench-sample")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # its own temporary server
    env.update(
        {
            DELAY_ENV: "2.0",  # keeps the judge stage busy long enough to be interrupted inside it
            CALL_LOG_ENV: str(tmp_path / "calls.log"),
            "OMNIEVAL_PROJECT_ROOT": str(ROOT),
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
            "OMNIEVAL_MLFLOW_ARTIFACTS": str(tmp_path / "artifacts"),
        }
    )
    run = _start(suite, env)
    try:
        deadline = time.monotonic() + 600
        while not any(stage == "judge" for _, stage in run.markers):
            assert run.process.poll() is None, "".join(run.output[-30:])
            assert time.monotonic() < deadline, "".join(run.output[-30:])
            time.sleep(0.2)
        children = psutil.Process(run.process.pid).children(recursive=True)
        assert children, "the run started no temporary Prefect server to check"
        run.process.send_signal(signal.SIGTERM)  # the main process only, as `kill PID` does
        code = run.process.wait(timeout=120)
        _, alive = psutil.wait_procs(children, timeout=30)
        run.reader.join(timeout=10)
        assert code == 143, "".join(run.output[-30:])
        assert "terminated" in "".join(run.output[-5:])
        assert alive == [], [p.cmdline() for p in alive]
        assert "Traceback" not in "".join(run.output)
    finally:
        if run.process.poll() is None:
            os.killpg(run.process.pid, signal.SIGKILL)
            run.process.wait()
