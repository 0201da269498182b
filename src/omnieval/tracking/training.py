"""MLflow side of evaluator training: runs, live epoch metrics, the Model Registry.

Layout in the experiment (default ``omnieval/train-evaluators``): a parent run per feature
(``omnieval.kind=evaluator-training``) holding the corpus as a dataset input, the gate result, the
selected checkpoint, the test figures and plots; a child run per grid point
(``omnieval.kind=grid-point``) with its learning rates and per-epoch curves; after registration, a
separate ``omnieval.kind=evaluator-check`` run that loads the registered version back and scores the
held-out clips with it, naming ``<registered name>@<version>``.

Everything goes through ``MlflowClient`` with explicit run ids (no fluent active-run state), so Prefect
tasks on worker threads can log safely.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.backends.evaluators import register_evaluator_registry
from omnieval.errors import OmnievalError
from omnieval.tracking._store import configure_mlflow, tracking_uri

KIND_TAG = "omnieval.kind"
WEIGHTS_TAG = "omnieval.weights_sha256"


@dataclass(frozen=True)
class RegisteredVersion:
    """A Model Registry entry: ``models:/<name>/<version>``; ``reused`` when identical weights were there."""

    name: str
    version: str
    reused: bool

    @property
    def uri(self) -> str:
        return f"models:/{self.name}/{self.version}"


def _flat(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            _flat(f"{prefix}.{key}" if prefix else str(key), sub, out)
    else:
        out[prefix] = (json.dumps(value) if isinstance(value, list | tuple) else str(value))[:500]


class TrainingTracker:
    """Thin wrapper over ``MlflowClient`` for one experiment."""

    def __init__(self, experiment: str) -> None:
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        from mlflow import MlflowClient

        self.experiment = experiment
        self.experiment_id = configure_mlflow(experiment)
        self.uri = tracking_uri()
        self.client = MlflowClient(tracking_uri=self.uri)

    def start_run(
        self,
        name: str,
        *,
        kind: str,
        parent: str | None = None,
        tags: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> str:
        """Create a run (nested under ``parent`` when given); returns its id."""
        all_tags = {KIND_TAG: kind, **(tags or {})}
        if parent is not None:
            all_tags["mlflow.parentRunId"] = parent
        run = self.client.create_run(self.experiment_id, run_name=name, tags=all_tags)
        run_id = str(run.info.run_id)
        if params:
            self.log_params(run_id, params)
        return run_id

    def log_params(self, run_id: str, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param

        flat: dict[str, str] = {}
        _flat("", params, flat)
        items = [Param(k, v) for k, v in flat.items()]
        for start in range(0, len(items), 100):
            self.client.log_batch(run_id, params=items[start : start + 100])

    def log_metrics(self, run_id: str, metrics: Mapping[str, float], *, step: int | None = None) -> None:
        import math
        import time

        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        items = [
            Metric(k, float(v), stamp, step or 0) for k, v in metrics.items() if not math.isnan(float(v))
        ]
        if items:
            self.client.log_batch(run_id, metrics=items)

    def set_tags(self, run_id: str, tags: Mapping[str, str]) -> None:
        from mlflow.entities import RunTag

        self.client.log_batch(run_id, tags=[RunTag(k, str(v)[:5000]) for k, v in tags.items()])

    def log_dict(self, run_id: str, data: Any, artifact_file: str) -> None:
        self.client.log_dict(run_id, data, artifact_file)

    def log_text(self, run_id: str, text: str, artifact_file: str) -> None:
        self.client.log_text(run_id, text, artifact_file)

    def log_artifact(self, run_id: str, path: Path, artifact_path: str | None = None) -> None:
        if path.is_dir():
            self.client.log_artifacts(run_id, str(path), artifact_path)
        elif path.is_file():
            self.client.log_artifact(run_id, str(path), artifact_path)

    def log_corpus(
        self, run_id: str, frame: Any, *, name: str, digest: str, source: str, context: str
    ) -> None:
        """Record the corpus manifest as the run's dataset input (shown in the UI's Datasets column)."""
        import warnings

        from mlflow.data.pandas_dataset import from_pandas
        from mlflow.entities import DatasetInput, InputTag

        with warnings.catch_warnings():
            # Schema inference notes (integer columns, ambiguous local source) are about model serving,
            # not about a training manifest.
            warnings.simplefilter("ignore", UserWarning)
            dataset = from_pandas(frame, source=source, name=name, digest=digest[:36])
        entity = DatasetInput(dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", context)])
        self.client.log_inputs(run_id, datasets=[entity])

    def end_run(self, run_id: str, *, failed: bool = False) -> None:
        self.client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")

    def register(
        self,
        run_id: str,
        folder: Path,
        *,
        name: str,
        description: str,
        tags: Mapping[str, str],
        weights_sha256: str,
    ) -> RegisteredVersion:
        """Log ``folder`` as the run's ``evaluator`` artifact and register it as a new version of ``name``.

        When a version with byte-identical weights already exists, that version is returned instead of
        a duplicate (``reused=True``); its tags are left as they were.
        """
        from mlflow.exceptions import MlflowException

        self.log_artifact(run_id, folder, "evaluator")
        try:
            self.client.get_registered_model(name)
        except MlflowException:
            self.client.create_registered_model(name, tags={KIND_TAG: "evaluator"}, description=description)
        else:
            self.client.update_registered_model(name, description=description)
        for existing in self.client.search_model_versions(f"name = '{name}'"):
            if (existing.tags or {}).get(WEIGHTS_TAG) == weights_sha256:
                return RegisteredVersion(name, str(existing.version), reused=True)
        version = self.client.create_model_version(
            name,
            source=f"runs:/{run_id}/evaluator",
            run_id=run_id,
            tags={**tags, WEIGHTS_TAG: weights_sha256},
            description=description,
        )
        return RegisteredVersion(name, str(version.version), reused=False)


def resolve_version(name: str, version: str) -> tuple[str, str]:
    """``(version number, source run id)`` of ``models:/<name>/<version>`` (``latest`` = highest number)."""
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri=tracking_uri())
    try:
        if version == "latest":
            versions = client.search_model_versions(f"name = '{name}'")
            if not versions:
                raise OmnievalError(f"registered model {name!r} has no versions at {tracking_uri()}")
            found = max(versions, key=lambda v: int(v.version))
        else:
            found = client.get_model_version(name, version)
    except MlflowException:
        raise OmnievalError(
            f"models:/{name}/{version} is not in the Model Registry at {tracking_uri()} "
            "(run `make train-demo`, or set MLFLOW_TRACKING_URI to the store that holds it)"
        ) from None
    return str(found.version), str(found.run_id or "")


def download_registered_evaluator(name: str, version: str) -> tuple[Path, str]:
    """Fetch the checkpoint folder of ``models:/<name>/<version>``; returns ``(folder, version)``.

    Registry versions are immutable, so a folder already downloaded for the same store, name,
    version and source run is reused (under ``.cache/omnieval/registry``).
    """
    import shutil

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow

    resolved, run_id = resolve_version(name, version)
    store = hashlib.sha256(tracking_uri().encode()).hexdigest()[:12]
    cache = Path(os.environ.get("OMNIEVAL_CACHE", ".cache/omnieval")) / "registry" / store / name
    target = cache / f"{resolved}-{run_id[:12]}"
    if (target / "card.json").is_file():
        return target, resolved
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{resolved}.", dir=cache))
    try:
        mlflow.set_tracking_uri(tracking_uri())
        local = Path(
            mlflow.artifacts.download_artifacts(
                artifact_uri=f"models:/{name}/{resolved}", dst_path=str(staging)
            )
        )
        if not (local / "card.json").is_file():
            raise OmnievalError(
                f"models:/{name}/{resolved} holds no evaluator checkpoint (card.json missing)"
            )
        if target.exists():
            shutil.rmtree(target)
        local.replace(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target, resolved


# ``models:/<name>/<version>`` evaluator references resolve through the registry above; the backend
# imports this module on first use of the scheme, so metrics and evaluators never import tracking.
register_evaluator_registry("models", download_registered_evaluator)
