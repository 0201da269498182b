"""Where MLflow keeps runs: the tracking URI and the experiment (created once, tagged for the UI)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from omnieval.tracking._credentials import apply_credentials

DEFAULT_STORE = Path("mlflow")

EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
"""Experiment tag the MLflow 3 UI reads to pick an experiment's landing tab (``ExperimentKindUtils.tsx``)."""
EXPERIMENT_KIND = "custom_model_development"
""""Machine learning" in the UI's kind selector: the experiment opens on its runs, not on GenAI traces."""


def tracking_uri() -> str:
    """``MLFLOW_TRACKING_URI`` when set, else the local sqlite store under ``mlflow/``.

    With a tracking server, the account named by ``OMNIEVAL_MLFLOW_CREDENTIALS`` (a 0600 file) is put
    into ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD`` unless those are already set
    (docs/team.md); a file with looser permissions is refused (ConfigError, exit 2).
    """
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        apply_credentials()
        return env
    DEFAULT_STORE.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(DEFAULT_STORE / 'mlflow.db').resolve()}"


def configure_mlflow(experiment: str) -> str:
    """Point mlflow at the store and make sure ``experiment`` exists; return its id.

    Experiments get an explicit artifact location under ``mlflow/artifacts`` for the local store,
    otherwise MLflow would drop artifacts into ``./mlruns``. Every experiment, new or existing, is
    tagged ``mlflow.experimentKind=custom_model_development`` so the UI opens it on its runs.
    """
    import mlflow

    uri = tracking_uri()
    mlflow.set_tracking_uri(uri)
    client = mlflow.MlflowClient()
    found = client.get_experiment_by_name(experiment)
    if found is not None:
        if found.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
            client.set_experiment_tag(found.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
        mlflow.set_experiment(experiment)
        return str(found.experiment_id)
    location = None
    if uri.startswith("sqlite:") or uri.startswith("file:") or "://" not in uri:
        artifacts = Path(
            os.environ.get("OMNIEVAL_MLFLOW_ARTIFACTS", str(DEFAULT_STORE / "artifacts"))
        ).resolve()
        artifacts.mkdir(parents=True, exist_ok=True)
        location = (artifacts / experiment.replace("/", "_")).as_uri()
    exp_id = client.create_experiment(
        experiment, artifact_location=location, tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
    )
    mlflow.set_experiment(experiment)
    return str(exp_id)


@contextmanager
def no_artifact_progress_bar() -> Iterator[None]:
    """MLflow's per-download progress bar off within the block (it prints on stderr, one bar per file)."""
    key = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
    before = os.environ.get(key)
    os.environ[key] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before
