"""MLflow logging of suite executions."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_STORE = Path("mlflow")


def tracking_uri() -> str:
    """``MLFLOW_TRACKING_URI`` when set, else the local sqlite store under ``mlflow/``."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    DEFAULT_STORE.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(DEFAULT_STORE / 'mlflow.db').resolve()}"


def configure_mlflow(experiment: str) -> str:
    """Point mlflow at the store and make sure ``experiment`` exists; return its id.

    Experiments get an explicit artifact location under ``mlflow/artifacts`` for the local store,
    otherwise MLflow would drop artifacts into ``./mlruns``.
    """
    import mlflow

    uri = tracking_uri()
    mlflow.set_tracking_uri(uri)
    found = mlflow.get_experiment_by_name(experiment)
    if found is not None:
        mlflow.set_experiment(experiment)
        return str(found.experiment_id)
    location = None
    if uri.startswith("sqlite:") or uri.startswith("file:") or "://" not in uri:
        artifacts = Path(
            os.environ.get("OMNIEVAL_MLFLOW_ARTIFACTS", str(DEFAULT_STORE / "artifacts"))
        ).resolve()
        artifacts.mkdir(parents=True, exist_ok=True)
        location = (artifacts / experiment.replace("/", "_")).as_uri()
    exp_id = mlflow.create_experiment(experiment, artifact_location=location)
    mlflow.set_experiment(experiment)
    return str(exp_id)


@dataclass(frozen=True)
class SuiteRunIds:
    parent: str
    systems: dict[str, str]
    analyses: dict[str, str] = field(default_factory=dict)


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), sub, out)
    elif isinstance(value, list | tuple):
        out[prefix] = json.dumps(value, default=str)[:500]
    else:
        out[prefix] = str(value)[:500]


def log_suite_run(
    *,
    experiment: str,
    suite: str,
    config: Mapping[str, Any],
    tags: Mapping[str, str],
    dataset_frame: Any,
    dataset_name: str,
    dataset_source: str,
    dataset_digest: str,
    system_metrics: Mapping[str, Mapping[str, float]],
    system_params: Mapping[str, Mapping[str, Any]],
    artifacts: list[Path],
    run_folder_for: Any,
    analyses_dir: Path | None = None,
) -> SuiteRunIds:
    """Log one suite execution: parent run, a child run per system, analysis child runs.

    ``run_folder_for(run_id, analysis_run_ids) -> Path`` builds the run folder once the run ids are
    known; its files are logged as the parent's artifacts next to ``artifacts``.
    """
    import mlflow

    configure_mlflow(experiment)
    params: dict[str, str] = {}
    _flatten("", config, params)
    with mlflow.start_run(run_name=f"{suite}") as parent:
        mlflow.set_tags({"omnieval.kind": "suite", "omnieval.suite": suite, **tags})
        mlflow.log_params(dict(list(params.items())[:400]))
        with warnings.catch_warnings():
            # A local folder matches two equivalent MLflow source types; either is right.
            warnings.simplefilter("ignore", UserWarning)
            dataset = mlflow.data.from_pandas(  # type: ignore[attr-defined]
                dataset_frame, source=dataset_source, name=dataset_name, digest=dataset_digest[:36]
            )
        mlflow.log_input(dataset, context="evaluation")
        system_runs: dict[str, str] = {}
        for system, metrics in system_metrics.items():
            with mlflow.start_run(run_name=system, nested=True) as child:
                mlflow.set_tags({"omnieval.kind": "system", "omnieval.system": system, **tags})
                flat: dict[str, str] = {}
                _flatten("system", system_params.get(system, {}), flat)
                if flat:
                    mlflow.log_params(flat)
                mlflow.log_input(dataset, context="evaluation")
                mlflow.log_metrics(dict(metrics))
                system_runs[system] = child.info.run_id
        analysis_runs: dict[str, str] = {}
        if analyses_dir is not None and analyses_dir.is_dir() and any(analyses_dir.glob("*.json")):
            from omnieval.tracking.analysis_runs import log_analysis_runs

            analysis_runs = dict(
                log_analysis_runs(analyses_dir, parent_run_id=parent.info.run_id, experiment=experiment)
            )
        folder: Path = run_folder_for(parent.info.run_id, analysis_runs)
        for path in artifacts:
            if path.is_file():
                mlflow.log_artifact(str(path))
        mlflow.log_artifacts(str(folder), artifact_path="run")
    return SuiteRunIds(parent.info.run_id, system_runs, analysis_runs)


def log_failed_run(
    *, experiment: str, suite: str, reason: str, artifacts: list[Path], tags: Mapping[str, str]
) -> str:
    """Record a suite execution that stopped at a gate: status FAILED, the gate result attached."""
    import mlflow

    configure_mlflow(experiment)
    with mlflow.start_run(run_name=f"{suite} (failed)") as run:
        mlflow.set_tags(
            {"omnieval.kind": "suite", "omnieval.suite": suite, "omnieval.failed": reason[:250], **tags}
        )
        for path in artifacts:
            if path.is_file():
                mlflow.log_artifact(str(path), artifact_path="gates")
        run_id = run.info.run_id
    mlflow.MlflowClient().set_terminated(run_id, status="FAILED")
    return str(run_id)
