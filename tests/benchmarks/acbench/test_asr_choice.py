"""The acbench WER/WPM ASR: Whisper large-v3 whenever a converted copy is in the model cache, else
the packaged tiny.en, named as the CPU deviation in lineage and the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnieval.backends.asr import resolve_whisper, whisper_large_v3_dir
from omnieval.benchmarks import RunSettings
from omnieval.benchmarks.acbench import AcbenchMetricsConfig
from omnieval.benchmarks.acbench._deviations import acbench_deviations
from omnieval.errors import ConfigError
from omnieval.lineage import Deviation


def asr_deviation(config: AcbenchMetricsConfig) -> Deviation | None:
    return next(
        (d for d in acbench_deviations(RunSettings(metrics=config)) if d.id == "metric-backbone-asr"), None
    )


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OMNIEVAL_MODEL_CACHE", str(tmp_path))
    return tmp_path


def test_without_large_v3_the_default_is_tiny_en_and_says_so(cache: Path) -> None:
    config = AcbenchMetricsConfig()
    assert config.asr_model == "whisper-tiny.en"
    assert whisper_large_v3_dir() == cache / "whisper-large-v3"
    asr = asr_deviation(config)
    assert asr is not None
    assert "instead of Whisper large-v3" in asr.what and "CPU default" in asr.what and str(cache) in asr.what
    with pytest.raises(ConfigError, match="ct2-transformers-converter"):
        resolve_whisper("whisper-large-v3")


def test_large_v3_on_disk_is_used_and_is_no_deviation(cache: Path) -> None:
    folder = cache / "whisper-large-v3"
    folder.mkdir()
    (folder / "model.bin").write_bytes(b"\0")
    config = AcbenchMetricsConfig()
    assert config.asr_model == "whisper-large-v3"
    assert resolve_whisper("whisper-large-v3") == folder
    assert asr_deviation(config) is None
    # The resolved name is what a dumped config (config.resolved.yaml, lineage) shows and re-reads.
    assert AcbenchMetricsConfig(**config.model_dump())
    assert config.model_dump()["asr_model"] == "whisper-large-v3"
    # A suite that pins a model keeps it; a pin other than tiny.en is a deviation without the CPU note.
    pinned = AcbenchMetricsConfig(asr_model="whisper-base")
    assert pinned.asr_model == "whisper-base"
    asr = asr_deviation(pinned)
    assert asr is not None and "CPU default" not in asr.what
