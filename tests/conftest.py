"""Session-wide test environment: offline, no telemetry, temp homes for Prefect, MLflow and W&B."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from omnieval.audio import espeak_wav

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


# Speech clips and the default analyzer, shared by the metric tests of every benchmark.
CLIP_LINE = "Come back here, you little rascal, before the tide takes you away."

CLIPS = {
    "female": {"voice": "en-us+f3", "rate_wpm": 175, "pitch": 50},
    "male": {"voice": "en-us+m3", "rate_wpm": 175, "pitch": 40},
    "slow": {"voice": "en-us+m3", "rate_wpm": 90, "pitch": 40},
    "fast": {"voice": "en-us+f3", "rate_wpm": 330, "pitch": 50},
    "whisper": {"voice": "en-us+whisper", "rate_wpm": 160, "pitch": 50},
}


@pytest.fixture(scope="session")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """espeak-ng renderings of one line with different delivery (22.05 kHz WAV)."""
    root = tmp_path_factory.mktemp("clips")
    return {name: espeak_wav(CLIP_LINE, root / f"{name}.wav", **opts) for name, opts in CLIPS.items()}  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def analyzer():  # type: ignore[no-untyped-def]
    """The default speech analyzer (packaged Whisper tiny.en), shared by the slow tests."""
    from omnieval.metrics import MetricsConfig, SpeechAnalyzer

    return SpeechAnalyzer(MetricsConfig(workers=2))
