"""``espeak``: espeak-ng speech with the planned gender, speed and pitch (CPU, not a generative model).

Delivery goes through :func:`omnieval.backends.tts.synthesize`, calibrated so omnieval's own speech
metrics measure the requested speed and pitch. Emotion is not rendered (espeak-ng has no emotional
voices); an example whose plan asks for one records ``not_rendered: [emotion]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from omnieval.systems.experts._base import SPEECH_EXPERTS, ExpertConfig, ExpertError, SpeechExpert, SpeechPlan


class EspeakConfig(ExpertConfig):
    """``espeak`` speech expert (CPU)."""

    name: Literal["espeak"] = "espeak"
    controlled_rate: bool = True
    """Correct espeak-ng's rate by measurement until the clip's words per second match the label."""


@SPEECH_EXPERTS.register("espeak")
class EspeakSpeechExpert(SpeechExpert[EspeakConfig]):
    name: ClassVar[str] = "espeak"
    config_model: ClassVar[type[ExpertConfig]] = EspeakConfig
    runs_on: ClassVar[str] = "cpu"
    is_generative_model: ClassVar[bool] = False

    def describe(self) -> str:
        return (
            "espeak: espeak-ng formant synthesis (not a generative model) with the planned gender, "
            "speed and pitch; emotion is not rendered"
        )

    def identity(self) -> dict[str, Any]:
        from omnieval.backends.tts import EspeakProsody

        return {**super().identity(), "prosody": EspeakProsody().version}

    def speak(self, plan: SpeechPlan, out: Path) -> dict[str, Any]:
        from omnieval.backends.tts import SpeechRequest, SynthesisError, synthesize

        request = SpeechRequest(text=plan.text, gender=plan.gender, speed=plan.speed, pitch=plan.pitch)
        try:
            info = synthesize(request, out, controlled_rate=self.config.controlled_rate)
        except SynthesisError as exc:
            raise ExpertError(f"espeak: {exc}") from exc
        not_rendered = ["emotion"] if plan.emotion != "neutral" else []
        return {"engine": info.engine, "command": list(info.command), "not_rendered": not_rendered}
