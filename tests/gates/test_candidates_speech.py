"""The candidates gate notes speech outputs that hold no speech (file + index), without failing.

The analyzer's ASR is scripted here (what Whisper hears per file); the real model's verdicts on
noise, music and speech are tested in tests/metrics/test_presence.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnieval.backends.asr import Transcript, WindowEvidence, Word
from omnieval.gates import SpeechCheck, gate_candidates
from omnieval.metrics import MetricsConfig, SpeechAnalyzer

RATE = 16_000


@dataclass
class _HeardByIndex:
    """Whisper stand-in: no word for the clips whose row index is listed in ``silent_rows``."""

    silent_rows: set[int]
    name: str = "scripted"
    calls: list[Path] = field(default_factory=list)

    def transcribe_file(self, path: Path) -> Transcript:
        self.calls.append(Path(path))
        if int(Path(path).parent.name) in self.silent_rows:
            return Transcript("", (), (WindowEvidence(0.95, -1.3, True, " you"),))
        return Transcript(
            "The fox ran.", (Word(" The", 0.1, 0.3), Word(" fox", 0.3, 0.6), Word(" ran.", 0.6, 1.0))
        )

    def identity(self) -> object:
        @dataclass(frozen=True)
        class _Ident:
            def as_dict(self) -> dict[str, str]:
                return {"name": "scripted"}

        return _Ident()


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> _HeardByIndex:
    asr = _HeardByIndex({1, 3})
    analyzer = SpeechAnalyzer(MetricsConfig(workers=1))
    analyzer._transcriber = asr
    # Both names: the gate reaches the analyzer through the metrics package, describe_cached through its module.
    monkeypatch.setattr("omnieval.metrics.default_analyzer", lambda config=None: analyzer)
    monkeypatch.setattr("omnieval.metrics._speech.default_analyzer", lambda config=None: analyzer)
    return asr


def _speech_folder(root: Path, rows: int) -> Path:
    rng = np.random.default_rng(0)
    t = np.arange(RATE) / RATE
    for index in range(rows):
        folder = root / "speech" / str(index)
        folder.mkdir(parents=True)
        # Distinct bytes per row, so no two clips share a cache entry.
        y = 0.3 * np.sin(2 * np.pi * (180.0 + 10 * index) * t) + 0.01 * rng.standard_normal(t.size)
        sf.write(str(folder / "generated.wav"), y.astype(np.float32), RATE, subtype="PCM_16")
    if rows > 2:
        (root / "speech" / "2" / "generated.wav").write_bytes(b"RIFF....")  # undecodable: not analysed
    return root


def test_no_speech_clips_are_notes_with_file_and_index(scripted: _HeardByIndex, tmp_path: Path) -> None:
    root = _speech_folder(tmp_path / "cands", 4)
    check = SpeechCheck(MetricsConfig(), tmp_path / "cache")
    result = gate_candidates(root, 4, tmp_path / "gate.json", modalities=("speech",), speech_check=check)
    assert result.success  # like a missing output, never a failure
    assert "speech: 2 of 4 outputs hold no speech (noise, music or silence; scored as missing_output)" in (
        result.notes
    )
    named = [n for n in result.notes if n.startswith("speech 1:") or n.startswith("speech 3:")]
    assert len(named) == 2
    assert named[0].startswith("speech 1: speech/1/generated.wav: no speech detected")
    assert "0.95" in named[0] and str(tmp_path) not in named[0]
    assert not any(n.startswith("speech 0:") for n in result.notes)
    assert {p.parent.name for p in scripted.calls} == {"0", "1", "3"}  # the undecodable clip is not analysed
    saved = json.loads((tmp_path / "gate.json").read_text())
    assert any("speech 3: speech/3/generated.wav" in n for n in saved["notes"])

    # The metrics cache now holds every analysed clip: a second gate (or the metrics stage) reuses it.
    scripted.calls.clear()
    again = gate_candidates(root, 4, None, modalities=("speech",), speech_check=check)
    assert again.notes == result.notes and scripted.calls == []


def test_without_a_speech_check_nothing_is_analysed(scripted: _HeardByIndex, tmp_path: Path) -> None:
    root = _speech_folder(tmp_path / "cands", 4)
    result = gate_candidates(root, 4, None, modalities=("speech",))
    assert result.success and scripted.calls == []
    assert not any("no speech" in n for n in result.notes)


def test_describe_cached_uses_the_metrics_stage_keys(scripted: _HeardByIndex, tmp_path: Path) -> None:
    from omnieval.hashing import sha256_file
    from omnieval.metrics._cache import MetricCache
    from omnieval.metrics._speech import default_analyzer, describe_cached, speech_cache_key

    root = _speech_folder(tmp_path / "cands", 2)  # row 1 is heard as no speech
    clip = root / "speech" / "0" / "generated.wav"
    copy = tmp_path / "copy.wav"
    copy.write_bytes(clip.read_bytes())
    cache = MetricCache(tmp_path / "cache")
    analyzer = default_analyzer()
    attrs, computed, hits = describe_cached(
        analyzer, [clip, copy, root / "speech" / "1" / "generated.wav"], cache
    )
    assert (computed, hits) == (2, 0) and len(scripted.calls) == 2  # identical bytes analysed once
    assert attrs[0].path == str(clip) and attrs[1].path == str(copy) and attrs[2].status == "no_speech"
    stored = cache.get("speech_meta", speech_cache_key(sha256_file(clip), analyzer.identity()))
    assert stored is not None and stored["status"] == "ok"
    _, computed, hits = describe_cached(analyzer, [copy], cache)
    assert (computed, hits) == (0, 1)
