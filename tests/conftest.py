"""Session-wide test environment: offline, no telemetry, temp homes for Prefect, MLflow and W&B."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "storybench-sample"

_OFFLINE = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "GX_ANALYTICS_ENABLED": "false",
    "WANDB_MODE": "offline",
    "WANDB_SILENT": "true",
    "DVC_NO_ANALYTICS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    "TOKENIZERS_PARALLELISM": "false",
}


def pytest_configure(config: pytest.Config) -> None:
    for key, value in _OFFLINE.items():
        os.environ.setdefault(key, value)
    base = Path(os.environ.get("OMNIEVAL_TEST_HOME", "/tmp/omnieval-test-home"))
    base.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_HOME", str(base / "prefect"))
    os.environ.setdefault("WANDB_DIR", str(base / "wandb"))


@pytest.fixture(scope="session")
def sample_root() -> Path:
    assert (SAMPLE / "data" / "omni_storybench.parquet").is_file(), "sample data missing: run `make setup`"
    return SAMPLE


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A private copy of the storybench sample that a test may corrupt."""
    root = tmp_path / "storybench"
    shutil.copytree(SAMPLE, root)
    return root


@pytest.fixture()
def mlflow_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private sqlite MLflow store for one test."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(tmp_path / "mlartifacts"))
    return uri
