"""OmniACBench metrics: config, Whisper-normalized WER, rows and statuses with scripted models, the
cache, and a real run on espeak-ng speech (slow)."""

from __future__ import annotations

import doctest
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from pydantic import ValidationError

from omnieval.audio import espeak_wav, harmonic_tone, prepare_speech
from omnieval.backends import phones
from omnieval.backends.asr import ModelIdentity, Transcript
from omnieval.backends.phones import PronunciationDecision
from omnieval.benchmarks.acbench import _metrics
from omnieval.benchmarks.acbench._metrics import (
    AcbenchMetricsConfig,
    compute_acbench_metrics,
    normalized_words,
    word_error_rate,
)
from omnieval.benchmarks.acbench._record import AcbenchInstance, HeteronymRef
from omnieval.errors import ConfigError
from omnieval.metrics.functional import acoustic
from omnieval.scores import SCORE_COLUMNS

LEAD = HeteronymRef("lead", "metal", {"metal": ("L", "EH1", "D"), "leash": ("L", "IY1", "D")})


def _inst(
    index: int, feature: str, target: str, script: str, heteronym: HeteronymRef | None = None
) -> AcbenchInstance:
    return AcbenchInstance(
        index=index,
        id=f"ac-{index}",
        feature=feature,
        target_value=target,
        script=script,
        instruction_audio=Path("instr.wav"),
        instruction_text="Read it the way the picture suggests.",
        image=Path("img.png"),
        image_keywords=("keyword",),
        heteronym=heteronym,
    )


# -- pure parts ----------------------------------------------------------------------------------


def test_acoustic_pure_functions() -> None:
    assert acoustic.words_per_minute(30, 10.0) == 180.0
    with pytest.raises(ValueError):
        acoustic.words_per_minute(3, 0.0)
    assert (
        acoustic.delta_wpm(
            [210.0, 190.0, 100.0, 120.0, float("nan")], ["fast", "Fast", "slow", "slow", "fast"]
        )
        == 90.0
    )
    with pytest.raises(ValueError, match="fast and one slow"):
        acoustic.delta_wpm([100.0], ["fast"])
    assert acoustic.phone_error_rate(list("abc"), list("abd")) == pytest.approx(1 / 3)
    assert acoustic.phone_error_rate(list("ab"), list("abcd")) == 1.0
    assert acoustic.is_whisper_like(0.3) and not acoustic.is_whisper_like(0.31)
    assert acoustic.vfr_at([0.0, 0.3, 0.5, 0.9]) == 0.5
    assert acoustic.classifier_accuracy(["Joy", "UK", "fear"], ["joy", "uk", "anger"]) == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("script", "heard"),
    [
        ("Mr. Smith is here.", "Mister Smith is here"),
        ("Dr. Jones arrived at 5 pm.", "doctor jones arrived at five pm"),
        ("In 1999 it cost $5.", "in nineteen ninety nine it cost five dollars"),
        ("We need twenty-five chairs.", "we need 25 chairs"),
        ("The colour of the theatre!", "the color of the theater"),
        ("I can't go, it's late.", "I can not go it is late"),
        ("It costs $3.50, 10% off.", "it costs three dollars and fifty cents ten percent off"),
        ("Hmm, well... okay.", "well okay"),  # fillers are dropped
    ],
)
def test_whisper_normalizer_removes_surface_differences(script: str, heard: str) -> None:
    assert normalized_words(script) == normalized_words(heard)
    assert word_error_rate(script, heard) == 0.0


def test_word_error_rate_counts_real_errors() -> None:
    assert word_error_rate("the cat sat on the mat", "the cat sat on a mat") == pytest.approx(1 / 6)
    assert word_error_rate("one two three", "") == 1.0
    assert word_error_rate("one two", "one two three four") == 1.0  # insertions count, WER can reach 1+
    assert word_error_rate("?!", "anything") is None


def test_docstring_examples() -> None:
    failures, tried = doctest.testmod(_metrics)
    assert tried >= 2 and failures == 0


def test_config_is_typed_frozen_and_strict() -> None:
    config = AcbenchMetricsConfig()
    assert (
        config.asr_model == "whisper-tiny.en"
        and config.evaluators == {}
        and config.pronunciation == "reading_decision"
    )
    with pytest.raises(ValidationError, match="extra"):
        AcbenchMetricsConfig(phone_recognizer="pocketsphinx")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="known: emotion, accent, timbre"):
        AcbenchMetricsConfig(evaluators={"global_accent": "evaluator:x"})
    with pytest.raises(ValidationError, match="classifier reference"):
        AcbenchMetricsConfig(evaluators={"emotion": "wavlm"})
    with pytest.raises(ValidationError, match="needs an ASR model"):
        AcbenchMetricsConfig(asr_model=None)
    with pytest.raises(ValidationError):
        config.workers = 3  # type: ignore[misc]
    assert AcbenchMetricsConfig(evaluators={"emotion": " evaluator:emo "}).evaluators == {
        "emotion": "evaluator:emo"
    }


# -- rows with scripted models -------------------------------------------------------------------


class ScriptedAsr:
    """Hears a fixed text per file name (the ASR stand-in)."""

    name = "scripted-asr"

    def __init__(self, heard: Mapping[str, str]) -> None:
        self.heard = dict(heard)
        self.calls = 0

    def transcribe(self, wave_16k: npt.NDArray[np.float32]) -> Transcript:
        raise NotImplementedError

    def transcribe_file(self, path: Path) -> Transcript:
        self.calls += 1
        return Transcript(self.heard[Path(path).parent.name], ())

    def identity(self) -> ModelIdentity:
        return ModelIdentity(self.name, "", "0" * 16, "scripted")


class ScriptedEvaluator:
    """Always predicts one label (the evaluator stand-in)."""

    def __init__(self, labels: tuple[str, ...], pick: str) -> None:
        self.labels = labels
        self.pick = pick

    def predict_proba(self, wave_16k: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        return np.array([1.0 if label == self.pick else 0.0 for label in self.labels])


def _write(path: Path, samples: npt.NDArray[np.float32], sr: int = 16_000) -> None:
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, samples, sr)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Scripted ASR, evaluators and pronunciation decision; returns handles to inspect."""
    heard = {
        "0": "we must hurry the train leaves now",
        "1": "we must hurry the train leaves",
        "2": "be very quiet",
        "3": "please hand me the lead",
        "4": "what a wonderful day",
        "5": "g'day mate",
        "6": "hello there",
    }
    asr = ScriptedAsr(heard)
    state: dict[str, Any] = {"asr": asr, "decided": "leash", "evaluators": []}
    monkeypatch.setattr(_metrics, "load_asr", lambda config: asr)

    def evaluator(ref: str) -> ScriptedEvaluator:
        state["evaluators"].append(ref)
        if "emotion" in ref:
            return ScriptedEvaluator(("angry", "joy", "sadness"), "joy")
        return ScriptedEvaluator(("Australia", "India", "UK"), "UK")

    monkeypatch.setattr(_metrics, "load_evaluator", evaluator)

    def decide(
        audio: Any, script: str, word: str, readings: Mapping[str, tuple[str, ...]]
    ) -> PronunciationDecision:
        # Stress digits of the manifest are gone; the aligner takes plain ARPAbet.
        assert word == "lead" and dict(readings) == {"metal": ("L", "EH", "D"), "leash": ("L", "IY", "D")}
        assert audio.ndim == 1 and script == "Please hand me the lead."
        chosen = state["decided"]
        return PronunciationDecision(chosen, {}, tuple(readings[chosen]), "scripted", 1.0)

    monkeypatch.setattr(phones, "pronunciation_decision", decide)
    return state


def _suite(tmp_path: Path) -> tuple[list[AcbenchInstance], Path]:
    instances = [
        _inst(0, "speech_rate", "fast", "We must hurry, the train leaves now."),
        _inst(1, "speech_rate", "slow", "We must hurry, the train leaves now."),
        _inst(2, "phonation", "whisper", "Be very quiet."),
        _inst(3, "pronunciation", "heteronym", "Please hand me the lead.", LEAD),
        _inst(4, "emotion", "joy", "What a wonderful day!"),
        _inst(5, "accent", "Australia", "G'day, mate."),
        _inst(6, "timbre", "adult male", "Hello there."),
        _inst(7, "emotion", "angry", "Stop that!"),  # no output at all
        _inst(8, "timbre", "elderly male", "Good morning."),  # empty file
        _inst(9, "accent", "UK", "Cheers."),  # not audio
        _inst(10, "speech_rate", "fast", "Quick!"),  # silence
    ]
    cand = tmp_path / "cand"
    tone = harmonic_tone(140.0, 1.0)
    padded = np.concatenate([np.zeros(8000, np.float32), tone, np.zeros(8000, np.float32)])
    for i in range(7):
        _write(cand / "speech" / str(i) / "generated.wav", padded if i == 0 else tone)
    (cand / "speech" / "8").mkdir(parents=True)
    (cand / "speech" / "8" / "generated.wav").write_bytes(b"")
    (cand / "speech" / "9").mkdir(parents=True)
    (cand / "speech" / "9" / "generated.wav").write_bytes(b"RIFF not really a wave file")
    _write(cand / "speech" / "10" / "generated.wav", np.zeros(16000, np.float32))
    return instances, cand


def _by(frame: Any, index: int, component: str) -> Any:
    row = frame[(frame["index"] == index) & (frame["component"] == component)]
    assert len(row) == 1, (index, component)
    return row.iloc[0]


def test_rows_statuses_and_values_with_scripted_models(tmp_path: Path, scripted: dict[str, Any]) -> None:
    instances, cand = _suite(tmp_path)
    config = AcbenchMetricsConfig(
        evaluators={"emotion": "evaluator:emotion", "accent": "evaluator:accent"}, workers=2
    )
    seen: list[tuple[int, int]] = []
    result = compute_acbench_metrics(
        instances,
        "sys",
        cand,
        condition="i_to_t",
        cache_dir=tmp_path / "cache",
        config=config,
        progress=lambda d, t: seen.append((d, t)),
    )
    frame = result.scores
    assert list(frame.columns) == list(SCORE_COLUMNS)
    assert len(frame) == 2 * len(instances)
    assert set(frame["benchmark"]) == {"acbench"} and set(frame["condition"]) == {"i_to_t"}
    assert (
        set(frame["judge"])
        == set(frame["panel"])
        == set(frame["subset"])
        == set(frame["paired_with"])
        == {""}
    )
    for inst in instances:
        rows = frame[frame["index"] == inst.index]
        assert set(rows["track"]) == {inst.feature} and set(rows["criterion"]) == {inst.target_value}
        assert set(rows["instance_id"]) == {inst.id}
    assert result.computed == 10 and result.cache_hits == 0 and seen[-1] == (11, 11)

    # WER after Whisper normalization: one deletion out of 7 words for index 1.
    assert _by(frame, 0, "wer")["value"] == 0.0
    assert _by(frame, 1, "wer")["value"] == pytest.approx(1 / 7)
    # WPM = transcript words / trimmed minutes: the half-second pads around the 1 s tone are
    # trimmed away (to librosa's frame grid), so the rate is near 7 words per second, not per 2 s.
    trimmed = prepare_speech(cand / "speech" / "0" / "generated.wav").trimmed_duration_s
    assert trimmed < 1.2
    assert _by(frame, 0, "wpm")["value"] == pytest.approx(7 * 60.0 / trimmed)
    vfr = _by(frame, 2, "vfr")
    assert vfr["status"] == "ok" and vfr["value"] > 0.9  # a steady tone is voiced throughout
    # PER: the decision heard "leash" (L IY D) where "metal" (L EH D) was wanted.
    assert _by(frame, 3, "per")["value"] == pytest.approx(1 / 3)
    assert _by(frame, 4, "attribute_accuracy")["value"] == 1.0  # joy predicted, joy wanted
    assert _by(frame, 5, "attribute_accuracy")["value"] == 0.0  # UK predicted, Australia wanted
    timbre = _by(frame, 6, "attribute_accuracy")
    assert timbre["status"] == "not_applicable" and np.isnan(timbre["value"])
    assert _by(frame, 6, "wer")["status"] == "ok"

    for index, status in [
        (7, "missing_output"),
        (8, "missing_output"),
        (9, "inference_error"),
        (10, "inference_error"),
    ]:
        rows = frame[frame["index"] == index]
        assert set(rows["status"]) == {status} and rows["value"].isna().all(), index
    assert result.lineage["statuses"] == {
        "ok": 7,
        "missing": 1,
        "empty_file": 1,
        "undecodable": 1,
        "silent": 1,
    }
    # The departures from the paper are the run's ledger (test_deviations.py), not the metrics lineage.
    assert "deviations" not in result.lineage
    assert len(result.lineage["problems"]) == 4 and set(result.lineage["models"]) == {
        "speech_rate",
        "phonation",
        "pronunciation",
        "emotion",
        "accent",
        "timbre",
    }

    # Same inputs again: everything comes from the cache, nothing is transcribed.
    calls = scripted["asr"].calls
    again = compute_acbench_metrics(
        instances, "sys", cand, condition="i_to_t", cache_dir=tmp_path / "cache", config=config
    )
    assert again.computed == 0 and again.cache_hits == 10 and scripted["asr"].calls == calls
    assert again.scores.equals(frame)

    # The condition is not part of a clip's key (same audio, same measurement), so another
    # condition's rows come from the cache even though the scripted decision changed meanwhile.
    scripted["decided"] = "metal"
    other = compute_acbench_metrics(
        instances, "sys", cand, condition="oracle", cache_dir=tmp_path / "cache", config=config
    )
    assert other.cache_hits == 10 and _by(other.scores, 3, "per")["value"] == pytest.approx(1 / 3)
    fresh = compute_acbench_metrics(instances, "sys", cand, condition="oracle", cache_dir=None, config=config)
    assert fresh.computed == 10 and _by(fresh.scores, 3, "per")["value"] == 0.0

    # Configuring the timbre evaluator re-measures only the timbre clips (one is the empty file).
    with_timbre = config.model_copy(
        update={"evaluators": {**config.evaluators, "timbre": "evaluator:timbre"}}
    )
    third = compute_acbench_metrics(
        instances, "sys", cand, condition="i_to_t", cache_dir=tmp_path / "cache", config=with_timbre
    )
    assert third.computed == 2 and third.cache_hits == 8


def test_a_model_failure_is_an_inference_error_not_a_crash(
    tmp_path: Path, scripted: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    instances, cand = _suite(tmp_path)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("decoder exploded")

    monkeypatch.setattr(phones, "pronunciation_decision", broken)
    result = compute_acbench_metrics(
        instances[:4],
        "sys",
        cand,
        condition="original",
        cache_dir=tmp_path / "c",
        config=AcbenchMetricsConfig(),
    )
    rows = result.scores[result.scores["index"] == 3]
    assert set(rows["status"]) == {"inference_error"}
    assert "decoder exploded" in result.lineage["problems"][0]
    # Failures are not cached: a fixed model is retried.
    assert not any("inference_error" in p.read_text() for p in (tmp_path / "c").rglob("*.json"))


def test_unknown_condition_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown acbench condition"):
        compute_acbench_metrics(
            [], "s", tmp_path, condition="S-to-T", cache_dir=None, config=AcbenchMetricsConfig()
        )


# -- real models on espeak-ng speech -----------------------------------------------------------------


@pytest.mark.slow
def test_metrics_on_espeak_speech(tmp_path: Path) -> None:
    from omnieval.benchmarks.acbench._heteronyms import espeak_markup, heteronym

    script = "We must hurry, the train leaves in five minutes."
    lead = heteronym("lead")
    metal = lead.readings["metal"]
    ref = HeteronymRef("lead", "metal", lead.arpabet())
    specs = [
        (_inst(0, "speech_rate", "fast", script), script, {"rate_wpm": 300}),
        (_inst(1, "speech_rate", "slow", script), script, {"rate_wpm": 100}),
        (
            _inst(2, "phonation", "whisper", "Be very quiet, the baby is sleeping."),
            None,
            {"voice": "en-us+whisper"},
        ),
        (_inst(3, "phonation", "whisper", "Be very quiet, the baby is sleeping."), None, {}),
        (
            _inst(4, "pronunciation", "heteronym", metal.example_script, ref),
            espeak_markup(metal.example_script, "lead", metal),
            {},
        ),
        (
            _inst(5, "pronunciation", "heteronym", metal.example_script, ref),
            espeak_markup(metal.example_script, "lead", lead.readings["leash"]),
            {},
        ),
        (_inst(6, "emotion", "joy", "What a wonderful day!"), None, {}),
    ]
    cand = tmp_path / "cand"
    for inst, said, opts in specs:
        espeak_wav(said or inst.script, cand / "speech" / str(inst.index) / "generated.wav", **opts)
    instances = [inst for inst, _s, _o in specs]
    result = compute_acbench_metrics(
        instances,
        "espeak",
        cand,
        condition="original",
        cache_dir=tmp_path / "cache",
        config=AcbenchMetricsConfig(),
    )
    frame = result.scores
    assert _by(frame, 0, "wpm")["value"] > _by(frame, 1, "wpm")["value"] + 60
    assert _by(frame, 1, "wer")["value"] <= 0.2
    assert _by(frame, 2, "vfr")["value"] <= 0.3 < _by(frame, 3, "vfr")["value"]  # whispered vs modal espeak
    # "lead" said as the metal (target) and as the leash: 0 vs L IY D against L EH D.
    assert _by(frame, 4, "per")["value"] == 0.0
    assert _by(frame, 5, "per")["value"] == pytest.approx(1 / 3)
    assert _by(frame, 6, "attribute_accuracy")["status"] == "not_applicable"

    from omnieval.benchmarks.acbench._aggregate import aggregate_acbench

    m = aggregate_acbench(frame)["systems"]["espeak"]["conditions"]["original"]
    assert m["delta_wpm"] > 60 and m["vfr_at_0_3"] == 50.0 and m["n"] == 7
    assert m["per"] == pytest.approx(100 / 6)
    assert m["not_computed"] == ["emotion_accuracy", "accent_accuracy", "timbre_accuracy"]
