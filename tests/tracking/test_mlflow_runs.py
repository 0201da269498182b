"""Suite executions as MLflow runs (names, times, columns, inputs, artifacts) in a throwaway store."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from omnieval.lineage import Deviation
from omnieval.tracking import (
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    SuiteRunIds,
    candidate_table,
    configure_mlflow,
    headline_metrics,
    log_failed_run,
    log_suite_run,
    suite_run_name,
    system_run_name,
)

EXPERIMENT = "omnieval/tracking-test"
METRICS = {
    "oracle": {
        "storybench.valid_only.total_average": 7.25,
        "storybench.zero_filled.total_average": 6.5,
        "storybench.valid_only.bertscore_f1": 0.91,
    },
    "shuffled": {
        "storybench.valid_only.total_average": 3.0,
        "storybench.zero_filled.total_average": 2.75,
        "storybench.valid_only.bertscore_f1": 0.4,
    },
}
SHA_A = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
SHA_B = "0f1e2d3c4b5a69788796a5b4c3d2e1f001234567"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # One store for the module: creating an MLflow sqlite database takes several seconds.
    root = tmp_path_factory.mktemp("mlflow")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root / 'mlflow.db'}")
        mp.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(root / "artifacts"))
        yield root


def _write_candidates(folder: Path, system: str) -> None:
    # Two candidate files whose bytes differ per system, one in a nested folder.
    (folder / "text").mkdir(parents=True, exist_ok=True)
    (folder / "speech" / "0").mkdir(parents=True, exist_ok=True)
    (folder / "text" / "0.txt").write_text(f"story told by {system}\n", encoding="utf-8")
    (folder / "speech" / "0" / "generated.wav").write_bytes(bytes(range(256)) * 4 + system.encode())


LEDGER = (
    Deviation(
        "judge-substitute-cpu", "A small CPU judge stands in for the paper's.", "Compare only with cpu runs."
    ),
    Deviation(
        "dataset-limit", "Only the first 4 instances are evaluated.", "Every number is over 4 instances."
    ),
)


def _log(
    tmp: Path,
    *,
    start: datetime,
    end: datetime,
    sha: str,
    dirty: bool = False,
    deviations: tuple[Deviation, ...] = LEDGER,
) -> SuiteRunIds:
    def build(run_id: str, _analyses: dict[str, str]) -> Path:
        folder = tmp / "runs" / run_id
        for system in METRICS:
            _write_candidates(folder / "candidates" / system, system)
        (folder / "report.html").write_text("<html><body>report</body></html>", encoding="utf-8")
        (folder / "leaderboard.json").write_text(json.dumps({"systems": list(METRICS)}), encoding="utf-8")
        pd.DataFrame({"system": ["oracle"], "value": [1.0]}).to_parquet(folder / "scores.parquet")
        (folder / "lineage.json").write_text("{}", encoding="utf-8")
        return folder

    return log_suite_run(
        experiment=EXPERIMENT,
        suite="nightly",
        config={"suite": "nightly", "benchmark": "storybench", "dataset": {"limit": 4}},
        tags={
            "omnieval.benchmark": "storybench",
            "omnieval.dataset.version": "d" * 64,
            "omnieval.dataset.dvc_md5": "e" * 32,
            "omnieval.git_sha": sha,
        },
        dataset_frame=pd.DataFrame({"instance_id": ["a", "b"], "index": [0, 1]}),
        dataset_name="storybench-sample",
        dataset_source=str(tmp / "data"),
        dataset_digest="f" * 64,
        system_metrics=METRICS,
        system_params={s: {"kind": s, "seed": 1} for s in METRICS},
        artifacts=[],
        run_folder_for=build,
        started_at=start,
        ended_at=end,
        panels=("cpu",),
        git_dirty=dirty,
        deviations=deviations,
    )


@pytest.fixture(scope="module")
def two_nights(store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("nights")
    first_start = datetime(2026, 11, 29, 2, 0, 5, tzinfo=UTC)
    second_start = datetime(2026, 11, 30, 2, 0, 7, tzinfo=UTC)
    first = _log(tmp, start=first_start, end=first_start + timedelta(minutes=14, seconds=3), sha=SHA_A)
    second = _log(
        tmp,
        start=second_start,
        end=second_start + timedelta(minutes=13),
        sha=SHA_B,
        dirty=True,
        deviations=(),
    )
    return {
        "tmp": tmp,
        "first": first,
        "second": second,
        "first_span": (first_start, first_start + timedelta(minutes=14, seconds=3)),
        "second_span": (second_start, second_start + timedelta(minutes=13)),
    }


def _client() -> Any:
    import mlflow

    return mlflow.MlflowClient()


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def test_experiment_opens_on_runs(two_nights: dict[str, Any]) -> None:
    experiment = _client().get_experiment_by_name(EXPERIMENT)
    assert EXPERIMENT_KIND_TAG == "mlflow.experimentKind"
    assert experiment.tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND == "custom_model_development"


def test_existing_experiment_gets_the_kind_tag(store: Path) -> None:
    client = _client()
    old = client.create_experiment("omnieval/created-before", tags={EXPERIMENT_KIND_TAG: "genai_development"})
    assert configure_mlflow("omnieval/created-before") == old
    assert client.get_experiment(old).tags[EXPERIMENT_KIND_TAG] == "custom_model_development"


def test_parent_names_tell_two_nights_apart(two_nights: dict[str, Any]) -> None:
    client = _client()
    first = client.get_run(two_nights["first"].parent)
    second = client.get_run(two_nights["second"].parent)
    start_a, _ = two_nights["first_span"]
    start_b, _ = two_nights["second_span"]
    local_a = start_a.astimezone().strftime("%Y-%m-%d %H:%M")
    local_b = start_b.astimezone().strftime("%Y-%m-%d %H:%M")
    assert first.info.run_name == f"nightly · {local_a} · a1b2c3d"
    assert second.info.run_name == f"nightly · {local_b} · 0f1e2d3-dirty"
    assert first.info.run_name != second.info.run_name
    assert two_nights["first"].name == first.info.run_name
    child = client.get_run(two_nights["first"].systems["oracle"])
    assert child.info.run_name == f"oracle · {local_a}"


def test_runs_span_the_real_execution(two_nights: dict[str, Any]) -> None:
    client = _client()
    for key, span in (("first", "first_span"), ("second", "second_span")):
        start, end = two_nights[span]
        ids: SuiteRunIds = two_nights[key]
        for run_id in (ids.parent, *ids.systems.values()):
            info = client.get_run(run_id).info
            assert info.status == "FINISHED"
            assert info.start_time == _ms(start)
            assert info.end_time - info.start_time == int((end - start).total_seconds() * 1000)
    first_start, _ = two_nights["first_span"]
    assert client.get_run(two_nights["first"].parent).info.end_time - _ms(first_start) == 843_000


def test_columns_of_the_runs_table(two_nights: dict[str, Any]) -> None:
    client = _client()
    ids: SuiteRunIds = two_nights["first"]
    parent = client.get_run(ids.parent).data
    expected_params = {
        "suite": "nightly",
        "benchmark": "storybench",
        "panels": "cpu",
        "dataset_version": "d" * 64,
        "git_sha": SHA_A,
        "systems": "oracle,shuffled",
    }
    assert {k: parent.params[k] for k in expected_params} == expected_params
    assert parent.params["dataset.limit"] == "4"
    assert parent.tags["omnieval.kind"] == "suite"
    assert parent.tags["omnieval.suite"] == "nightly"
    assert parent.tags["omnieval.benchmark"] == "storybench"
    assert parent.tags["omnieval.panel"] == "cpu"
    assert parent.tags["omnieval.dataset.version"] == "d" * 64
    assert parent.tags["omnieval.dataset.dvc_md5"] == "e" * 32
    assert parent.tags["omnieval.git_sha"] == SHA_A
    assert "nightly" in parent.tags["mlflow.note.content"]
    # The parent repeats only the headline metrics, prefixed by the system.
    assert parent.metrics == {
        "oracle/storybench.valid_only.total_average": 7.25,
        "oracle/storybench.zero_filled.total_average": 6.5,
        "shuffled/storybench.valid_only.total_average": 3.0,
        "shuffled/storybench.zero_filled.total_average": 2.75,
    }
    for system, child_id in ids.systems.items():
        child = client.get_run(child_id).data
        assert child.tags["omnieval.kind"] == "system"
        assert child.tags["omnieval.system"] == system
        assert child.tags["mlflow.parentRunId"] == ids.parent
        for tag in ("omnieval.benchmark", "omnieval.suite", "omnieval.panel", "omnieval.git_sha"):
            assert child.tags[tag] == parent.tags[tag], tag
        assert child.params["system"] == system
        assert child.params["system.kind"] == system
        for param in ("suite", "benchmark", "panels", "dataset_version", "git_sha"):
            assert child.params[param] == parent.params[param], param
        # The §5 keys stay on the child runs, unprefixed.
        assert child.metrics == METRICS[system]
        assert f"`candidates/{system}` (2 files" in child.tags["mlflow.note.content"]


def test_the_parent_carries_the_deviation_ids(two_nights: dict[str, Any]) -> None:
    client = _client()
    first: SuiteRunIds = two_nights["first"]
    parent = client.get_run(first.parent).data
    assert parent.tags["omnieval.deviations"] == "judge-substitute-cpu,dataset-limit"
    note = parent.tags["mlflow.note.content"].splitlines()
    assert f"- deviation `dataset-limit`: {LEDGER[1].what} Effect: {LEDGER[1].effect}" in note
    # The parent run only: a system's run is not a second place to read (or filter) the ledger from.
    for child_id in first.systems.values():
        assert "omnieval.deviations" not in client.get_run(child_id).data.tags
    # An empty ledger is said, not left out: the run followed the paper's protocol.
    second = client.get_run(two_nights["second"].parent).data
    assert second.tags["omnieval.deviations"] == "none"
    assert "- deviations from the paper's protocol: none" in second.tags["mlflow.note.content"]


def _tree_hash(folder: Path) -> str:
    # Independent of candidate_table: walk with os-level listing, hash in one pass per file.
    digest = hashlib.sha256()
    paths = sorted(str(p.relative_to(folder).as_posix()) for p in folder.glob("**/*") if p.is_file())
    for rel in paths:
        digest.update(rel.encode("utf-8"))
        with (folder / rel).open("rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def test_dataset_and_candidates_are_run_inputs(two_nights: dict[str, Any]) -> None:
    client = _client()
    ids: SuiteRunIds = two_nights["first"]
    parent_inputs = client.get_run(ids.parent).inputs.dataset_inputs
    assert [(d.dataset.name, d.dataset.digest) for d in parent_inputs] == [("storybench-sample", "f" * 36)]
    folder = two_nights["tmp"] / "runs" / ids.parent
    for system, child_id in ids.systems.items():
        inputs = {d.dataset.name: d for d in client.get_run(child_id).inputs.dataset_inputs}
        assert set(inputs) == {"storybench-sample", f"candidates/{system}"}
        candidates = inputs[f"candidates/{system}"]
        assert candidates.dataset.digest == _tree_hash(folder / "candidates" / system)[:36]
        source = json.loads(candidates.dataset.source)
        assert Path(next(iter(source.values()))) == (folder / "candidates" / system).resolve()
        assert {t.key: t.value for t in candidates.tags}["mlflow.data.context"] == "candidates"
        assert {t.key: t.value for t in inputs["storybench-sample"].tags}[
            "mlflow.data.context"
        ] == "evaluation"
        schema = json.loads(candidates.dataset.schema)
        assert [c["name"] for c in schema["mlflow_colspec"]] == ["path", "bytes", "sha256"]
        assert json.loads(candidates.dataset.profile)["num_rows"] == 2


def test_report_and_leaderboard_are_artifacts(two_nights: dict[str, Any]) -> None:
    client = _client()
    parent = two_nights["first"].parent
    top = {f.path for f in client.list_artifacts(parent)}
    assert {"report.html", "leaderboard.json", "scores.parquet", "run"} <= top
    run_files = {f.path for f in client.list_artifacts(parent, "run")}
    assert {"run/report.html", "run/lineage.json", "run/candidates"} <= run_files


def test_candidate_table_lists_every_file(tmp_path: Path) -> None:
    from omnieval.stages._common import tree_digest

    _write_candidates(tmp_path, "oracle")
    table = candidate_table(tmp_path)
    assert list(table.frame["path"]) == ["speech/0/generated.wav", "text/0.txt"]
    wav = tmp_path / "speech" / "0" / "generated.wav"
    assert table.frame.loc[0, "bytes"] == wav.stat().st_size == 1024 + len("oracle")
    assert table.frame.loc[0, "sha256"] == hashlib.sha256(wav.read_bytes()).hexdigest()
    assert table.digest == tree_digest(tmp_path) == _tree_hash(tmp_path)


def test_headline_metrics_pick_each_benchmarks_summary() -> None:
    from omnieval.benchmarks import get_benchmark

    metrics = {
        "a": {"acbench.original.wer": 30.0, "acbench.original.per": 12.0, "acbench.s_to_t.wer": 28.0},
        "b": {"prism.mixed.final": 6.0, "prism.mixed.av_coherence": 5.0},
    }
    patterns = [
        *get_benchmark("acbench").headline_metric_patterns,
        *get_benchmark("prism").headline_metric_patterns,
    ]
    assert headline_metrics(metrics, patterns) == {
        "a/acbench.original.wer": 30.0,
        "a/acbench.s_to_t.wer": 28.0,
        "b/prism.mixed.final": 6.0,
    }
    assert headline_metrics(metrics, ["*.per"]) == {"a/acbench.original.per": 12.0}
    assert headline_metrics({"s": {"storybench.valid_only.total_average": 7.0}}) == {
        "s/storybench.valid_only.total_average": 7.0
    }


def test_names_use_local_time() -> None:
    moment = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
    local = moment.astimezone().strftime("%Y-%m-%d %H:%M")
    assert suite_run_name("acbench", moment, "unknown") == f"acbench · {local} · unknown"
    assert system_run_name("neutral", moment) == f"neutral · {local}"


def test_failed_run_is_named_and_failed(store: Path) -> None:
    start = datetime(2026, 11, 28, 2, 0, tzinfo=UTC)
    run_id = log_failed_run(
        experiment=EXPERIMENT,
        suite="nightly",
        reason="dataset gate failed",
        artifacts=[],
        tags={"omnieval.benchmark": "storybench"},
        started_at=start,
    )
    run = _client().get_run(run_id)
    assert run.info.status == "FAILED"
    assert run.info.start_time == _ms(start)
    assert run.info.run_name.endswith(" · failed")
    assert run.data.tags["omnieval.failed"] == "dataset gate failed"


def test_ui_links_open_each_experiment_on_its_runs(two_nights: dict[str, Any]) -> None:
    from omnieval.tracking.ui_links import experiment_links

    client = _client()
    bare = client.create_experiment("omnieval/no-kind-yet")
    links = {link.name: link.url for link in experiment_links("http://127.0.0.1:5000/")}
    exp_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    assert (
        links[EXPERIMENT]
        == f"http://127.0.0.1:5000/#/experiments/{exp_id}/runs?workflowType=machine_learning"
    )
    assert "omnieval/no-kind-yet" in links
    assert client.get_experiment(bare).tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND
