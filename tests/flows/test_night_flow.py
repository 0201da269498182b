"""The night flow: the suites in order, a failing suite recorded and the rest still run, one record,
one MLflow run, one notification; ``serve --night`` registers one deployment on one schedule.

The suites are the project's three pipelines (copied with a private runs folder and a file notifier);
the nightly flow each would run is replaced by a scripted one that writes a hand-built run folder
(tests/night/runs.py) or raises from inside a stage, so no model runs and no Prefect server starts
(``night.fn`` is the flow's function).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.night.runs import WORSE_WER, usage, write_run

from omnieval.cli import main

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = ("nightly", "acbench", "prism")


def _suites(tmp: Path, log: Path) -> list[Path]:
    paths = []
    for name in PIPELINES:
        suite = yaml.safe_load((ROOT / "pipelines" / f"{name}.yaml").read_text())
        suite["runs_dir"] = str(tmp / "runs")
        suite["state_dir"] = str(tmp / "state" / name)
        suite["regression"] = {"notify": [{"kind": "file", "path": str(log)}]}
        path = tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump(suite))
        paths.append(path)
    return paths


def _raise_in_stage(stage: str, message: str) -> None:
    """Raise as if from ``omnieval/stages/<stage>.py`` (its frame is what the flow looks for)."""
    code = compile(f"raise RuntimeError({message!r})", f"/x/src/omnieval/stages/{stage}.py", "exec")
    exec(code)


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, bool]]]:
    calls: list[tuple[str, bool]] = []
    runs = tmp_path / "runs"

    def nightly(suite_path: str, notify: bool = True, **_: Any) -> dict[str, Any]:
        name = Path(suite_path).stem
        calls.append((name, notify))
        if name == "prism":
            _raise_in_stage("judge", "judge server unreachable")
        verdict, reasons = ("NO-GO", [WORSE_WER]) if name == "acbench" else ("GO", ["fine"])
        folder = write_run(runs, name, f"{name}-run", verdict, reasons, usage_doc=usage(judge_calls=2))
        return {"suite": name, "run_id": folder.name, "run_folder": str(folder)}

    monkeypatch.setattr("omnieval.flows.night.nightly", nightly)
    yield calls


@pytest.fixture
def mlflow_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # A file store is created in milliseconds, where a sqlite store takes seconds.
    root = tmp_path / "mlruns"
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", root.as_uri())
    return root


def test_a_night_of_three_suites_one_degraded_one_failing(
    tmp_path: Path, scripted: list[tuple[str, bool]], mlflow_files: Path
) -> None:
    from mlflow.tracking import MlflowClient

    from omnieval.flows.night import night

    log = tmp_path / "verdicts.jsonl"
    summary = night.fn([str(p) for p in _suites(tmp_path, log)], date="2026-12-03")
    assert scripted == [("nightly", False), ("acbench", False), ("prism", False)]
    assert summary["verdict"] == "NO-GO" and summary["problems"] == []
    record = json.loads(Path(summary["record"]).read_text())
    assert Path(summary["record"]) == tmp_path / "runs" / "nights" / "2026-12-03" / "night.json"
    assert {k: v["verdict"] for k, v in record["suites"].items()} == {
        "nightly": "GO",
        "acbench": "NO-GO",
        "prism": "INCONCLUSIVE",
    }
    assert record["reasons"] == [
        f"acbench: {WORSE_WER}",
        "prism: failed to run in the judge stage: RuntimeError: judge server unreachable",
    ]
    assert record["usage"]["judging"]["calls"] == 4  # two suites ran, two judge calls each
    assert Path(summary["page"]).read_text().count('class="banner ') == 3

    lines = log.read_text().splitlines()
    assert len(lines) == 1, lines  # the suites' own notifications were held back
    assert json.loads(lines[0])["subject"] == (
        "omnieval night 2026-12-03: NO-GO (acbench: cascade-cpu / original.wer)"
    )

    client = MlflowClient(mlflow_files.as_uri())
    experiment = client.get_experiment_by_name("omnieval/nights")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id], "tags.`omnieval.night` = '2026-12-03'")
    assert run.info.run_id == summary["mlflow_run_id"] and run.info.status == "FINISHED"
    tags = run.data.tags
    assert tags["omnieval.night.verdict"] == "NO-GO" and tags["omnieval.regression"] == "NO-GO"
    assert tags["omnieval.night.acbench.verdict"] == "NO-GO"
    assert tags["omnieval.night.prism.verdict"] == "INCONCLUSIVE"
    assert tags["omnieval.night.nightly.run_id"] == "nightly-run"
    assert "omnieval.night.prism.run_id" not in tags
    assert run.data.metrics["usage.judging.calls"] == 4.0
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"night.json", "night.html"}

    # The same night again (a catch-up) replaces the record and updates the same MLflow run.
    again = night.fn([str(p) for p in _suites(tmp_path, log)], date="2026-12-03")
    assert again["mlflow_run_id"] == summary["mlflow_run_id"]
    assert len(log.read_text().splitlines()) == 2


def test_a_suite_that_does_not_load_fails_alone(tmp_path: Path, scripted: list[tuple[str, bool]]) -> None:
    from omnieval.flows.night import night

    nightly, _, prism = _suites(tmp_path, tmp_path / "verdicts.jsonl")
    summary = night.fn(
        [str(nightly), str(tmp_path / "missing.yaml"), str(prism)], date="2026-12-04", track=False
    )
    assert [name for name, _ in scripted] == ["nightly", "prism"]
    assert summary["suites"]["missing"]["verdict"] == "INCONCLUSIVE"
    assert summary["verdict"] == "INCONCLUSIVE"
    assert summary["reasons"][0].startswith("missing: failed to run: suite config")
    assert summary["reasons"][1].startswith("prism: failed to run in the judge stage")


def test_the_stage_a_suite_failed_in_is_read_from_its_traceback() -> None:
    from omnieval.flows.night import failed_stage

    with pytest.raises(RuntimeError) as caught:
        _raise_in_stage("validate", "bad rows")
    assert failed_stage(caught.value) == "validate"
    assert failed_stage(ValueError("raised nowhere")) is None


def test_serve_night_registers_one_deployment_on_one_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnieval.config import load_suite
    from omnieval.flows import _serving
    from omnieval.flows.night import night

    seen: list[Any] = []

    async def fake_serve(served: Any, *, announce: Any) -> None:
        seen.extend(served)

    monkeypatch.setattr(_serving, "_serve", fake_serve)
    paths = [ROOT / "pipelines" / f"{name}.yaml" for name in PIPELINES]
    suites = [(load_suite(p), p) for p in paths]
    lines: list[str] = []
    asyncio.run(
        _serving.serve_night(suites, cron="15 1 * * *", timezone="Europe/Paris", announce=lines.append)
    )
    (one,) = seen
    assert one.deployment == "omnieval-night" and one.flow is night
    assert (one.cron, one.timezone) == ("15 1 * * *", "Europe/Paris")
    assert one.parameters == {"suite_paths": [str(p) for p in paths], "timezone": "Europe/Paris"}
    assert lines == ["  night: nightly, acbench, prism, one after another"]


def test_serve_refuses_a_schedule_without_night_and_a_bad_cron(capsys: pytest.CaptureFixture[str]) -> None:
    suite = str(ROOT / "pipelines" / "nightly.yaml")
    # Bad arguments are usage errors: exit 2, before any Prefect server is looked for.
    assert main(["serve", "--cron", "0 3 * * *", suite]) == 2
    assert "--cron: only used with --night" in capsys.readouterr().err
    assert main(["serve", "--night", "--cron", "every night", suite]) == 2
    assert "expected five fields" in capsys.readouterr().err
    assert main(["serve", "--night", "--timezone", "Mars/Olympus", suite]) == 2
    assert "not a known time zone" in capsys.readouterr().err


@pytest.mark.usefixtures("prefect_api")
def test_night_run_command_runs_the_flow_under_prefect(
    tmp_path: Path,
    scripted: list[tuple[str, bool]],
    mlflow_files: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``omnieval night DATE --run ...``: the real Prefect flow (parameters validated, the raising
    suite caught), then the record printed; exit 3 with --fail-on-regression on this NO-GO night."""
    suites = [str(p) for p in _suites(tmp_path, tmp_path / "verdicts.jsonl")]
    code = main(["night", "2026-12-05", "--fail-on-regression", "--run", *suites])
    out = capsys.readouterr().out
    assert code == 3, out
    assert [name for name, _ in scripted] == ["nightly", "acbench", "prism"]
    assert out.splitlines()[0].startswith("night 2026-12-05: NO-GO")
    assert "MLflow: run " in out
    assert (tmp_path / "runs" / "nights" / "2026-12-05" / "night.html").is_file()


def test_a_night_stopped_mid_suite_records_it_failed_and_the_rest_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnieval.cli import Terminated
    from omnieval.flows.night import night

    runs = tmp_path / "runs"

    def nightly(suite_path: str, **_: Any) -> dict[str, Any]:
        name = Path(suite_path).stem
        if name == "acbench":  # serve stops: SIGTERM lands inside the judge stage
            code = compile("raise Terminated", "/x/src/omnieval/stages/judge.py", "exec")
            exec(code, {"Terminated": Terminated})
        folder = write_run(runs, name, f"{name}-run", "GO", ["fine"], usage_doc=usage(judge_calls=2))
        return {"suite": name, "run_id": folder.name, "run_folder": str(folder)}

    monkeypatch.setattr("omnieval.flows.night.nightly", nightly)
    monkeypatch.setenv("OMNIEVAL_STOPPED_BY", "omnieval serve")
    log = tmp_path / "verdicts.jsonl"
    with pytest.raises(Terminated):  # the flow run still ends interrupted (cancelled/crashed)
        night.fn([str(p) for p in _suites(tmp_path, log)], date="2026-12-05", track=False)
    record = json.loads((runs / "nights" / "2026-12-05" / "night.json").read_text())
    assert {k: v["verdict"] for k, v in record["suites"].items()} == {
        "nightly": "GO",
        "acbench": "INCONCLUSIVE",
        "prism": "INCONCLUSIVE",
    }
    assert record["verdict"] == "INCONCLUSIVE"
    assert record["reasons"] == [
        "acbench: failed to run in the judge stage: interrupted: omnieval serve stopped (SIGTERM)",
        "prism: failed to run: the night was interrupted before this suite ran",
    ]
    assert not log.exists()  # no notification: serve's catch-up reruns the night and notifies
