"""OmniACBench reference systems: the oracle renders what espeak-ng can, neutral ignores the target."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnieval.backends.tts import SynthesisError
from omnieval.benchmarks.acbench import _systems
from omnieval.benchmarks.acbench._record import AcbenchDataset, AcbenchInstance, load_acbench
from omnieval.benchmarks.acbench._systems import (
    Neutral,
    OracleControl,
    arpabet_to_espeak,
    oracle_delivery,
)
from omnieval.systems import GenerationRequest

SCRIPT = "The next train leaves from platform four."


@pytest.fixture(scope="module")
def dataset(ac_sample: Path) -> AcbenchDataset:
    return load_acbench(ac_sample)


def _as(inst: AcbenchInstance, index: int, script: str = SCRIPT) -> AcbenchInstance:
    return dataclasses.replace(inst, index=index, script=script)


def _wav(root: Path, index: int) -> Path:
    return root / "speech" / str(index) / "generated.wav"


def _seconds(path: Path) -> float:
    info = sf.info(str(path))
    return float(info.frames / info.samplerate)


def test_registered_kinds_and_flags() -> None:
    from omnieval.systems import SYSTEMS

    assert SYSTEMS.get("oracle-control") is OracleControl and OracleControl.uses_ground_truth
    assert SYSTEMS.get("neutral") is Neutral and not Neutral.uses_ground_truth
    assert (OracleControl.kind, Neutral.kind) == ("oracle-control", "neutral")


def test_oracle_fast_is_shorter_than_slow(dataset: AcbenchDataset, tmp_path: Path) -> None:
    fast, slow = dataset.by_id("ac-0001"), dataset.by_id("ac-0003")
    assert (fast.target_value, slow.target_value) == ("fast", "slow")
    summary = OracleControl().generate(
        GenerationRequest([_as(fast, 0), _as(slow, 1)], tmp_path, condition="original")
    )
    assert summary.written == 2 and not summary.missing
    assert _seconds(_wav(tmp_path, 0)) < 0.6 * _seconds(_wav(tmp_path, 1))


def test_oracle_whisper_has_few_voiced_frames(dataset: AcbenchDataset, tmp_path: Path) -> None:
    from omnieval.audio import prepare_speech
    from omnieval.metrics.functional.pitch import pyin_f0

    whisper = dataset.by_id("ac-0005")
    assert whisper.target_value == "whisper"
    OracleControl().generate(GenerationRequest([_as(whisper, 0)], tmp_path / "oracle", condition="original"))
    Neutral().generate(GenerationRequest([_as(whisper, 0)], tmp_path / "neutral", condition="original"))

    def vfr(root: Path) -> float:
        speech = prepare_speech(_wav(root, 0))
        return pyin_f0(speech.trimmed, sr=16_000).voiced_frame_ratio

    assert vfr(tmp_path / "oracle") <= 0.3 < vfr(tmp_path / "neutral")


def test_oracle_says_the_target_reading(dataset: AcbenchDataset, tmp_path: Path) -> None:
    leash, metal = dataset.by_id("ac-0007"), dataset.by_id("ac-0008")
    assert leash.script == metal.script
    summary = OracleControl().generate(
        GenerationRequest(
            [_as(leash, 0, leash.script), _as(metal, 1, metal.script)], tmp_path, condition="oracle"
        )
    )
    assert _wav(tmp_path, 0).read_bytes() != _wav(tmp_path, 1).read_bytes()
    assert "[[l'Ed]]" in summary.lineage["instances"]["ac-0008"]["how"]
    assert oracle_delivery(metal, metal.script).request.text == "Please hand me the [[l'Ed]]."


def test_oracle_lineage_says_what_stayed_neutral(dataset: AcbenchDataset, tmp_path: Path) -> None:
    picked = [dataset.by_id(i) for i in ("ac-0015", "ac-0027", "ac-0029", "ac-0031", "ac-0039")]
    assert [i.target_value for i in picked] == ["angry", "UK", "India", "Australia", "elderly male"]
    summary = OracleControl().generate(GenerationRequest(picked, tmp_path, condition="all_to_t"))
    rendered = {k: v["rendered"] for k, v in summary.lineage["instances"].items()}
    assert rendered == {
        "ac-0015": False,
        "ac-0027": True,
        "ac-0029": False,
        "ac-0031": False,
        "ac-0039": True,
    }
    assert "emotion=angry" in summary.lineage["targets_left_neutral"]
    assert "accent=UK" in summary.lineage["targets_rendered"]
    assert summary.lineage["condition"] == "all_to_t"
    assert "en-gb" in summary.lineage["instances"]["ac-0027"]["how"]
    assert "grandpa" in summary.lineage["instances"]["ac-0039"]["how"]


def test_neutral_ignores_target_and_condition(dataset: AcbenchDataset, tmp_path: Path) -> None:
    fast, slow, whisper = (dataset.by_id(i) for i in ("ac-0001", "ac-0003", "ac-0005"))
    batch = [_as(fast, 0), _as(slow, 1), _as(whisper, 2)]
    calls: list[tuple[int, int]] = []
    summary = Neutral().generate(
        GenerationRequest(
            batch, tmp_path / "a", condition="original", progress=lambda d, n: calls.append((d, n))
        )
    )
    Neutral().generate(GenerationRequest(batch, tmp_path / "b", condition="oracle"))
    clips = {_wav(root, i).read_bytes() for root in (tmp_path / "a", tmp_path / "b") for i in range(3)}
    assert len(clips) == 1
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert summary.written == 3 and summary.lineage["inputs_used"] == ["script"]


def test_failed_synthesis_is_recorded_missing(
    dataset: AcbenchDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise SynthesisError("espeak-ng is not installed")

    monkeypatch.setattr(_systems, "synthesize", broken)
    summary = OracleControl().generate(GenerationRequest([dataset[0]], tmp_path, condition="original"))
    assert summary.written == 0 and summary.missing == {"speech": 1}
    assert "not installed" in (tmp_path / "speech" / "0" / "missing.txt").read_text(encoding="utf-8")


def test_arpabet_fallback() -> None:
    assert arpabet_to_espeak(["L", "EH1", "D"]) == "l'Ed"
    assert arpabet_to_espeak(["P", "R", "EH1", "Z", "AH0", "N", "T"]) == "pr'Ez@nt"
    assert np.all([arpabet_to_espeak([p]) for p in ("AA", "NG", "ZH")])
