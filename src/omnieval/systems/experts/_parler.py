"""``parler``: description-conditioned speech through a local transformers checkpoint (GPU).

Two checkpoint families load from ``model_path`` (read from its ``config.json``):

- **Parler-TTS** (``ParlerTTSForConditionalGeneration``, e.g. parler-tts-mini-v1): the planned
  delivery becomes a natural-language description ("A female speaker delivers a happy line at a fast
  pace with a high-pitched voice..."), the line is the prompt; every label (gender, emotion, speed,
  pitch) is requested. Needs the ``parler_tts`` package in the environment (it is not in omnieval's
  lock: parler-tts pins an older transformers); without it the expert fails to open with that reason.
- **transformers text-to-waveform** checkpoints (``VitsModel``, the MMS-TTS class): the line is
  spoken with ``speaking_rate`` set from the planned speed; gender, pitch and emotion are not
  rendered (the model has one voice) and each example records so under ``not_rendered``.

On CPU the test suite checks the second path end to end with a tiny randomly initialised VITS
model built in the test (noise, but a real decodable WAV from the real code path); the Parler-TTS
path runs only where ``parler_tts`` and a GPU are present.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from omnieval.systems.experts._base import (
    SPEECH_EXPERTS,
    ExpertConfig,
    ExpertError,
    SpeechExpert,
    SpeechPlan,
    folder_weights,
    release_accelerator_memory,
)

_SPEED_WORDS = {"slow": "slow", "normal": "moderate", "fast": "fast"}
_PITCH_WORDS = {"low": "low-pitched", "normal": "moderately pitched", "high": "high-pitched"}
#: VITS ``speaking_rate`` per speed label (duration scale 1 / rate).
_VITS_RATE = {"slow": 0.7, "normal": 1.0, "fast": 1.5}


class ParlerConfig(ExpertConfig):
    """``parler`` speech expert (GPU; CPU works for tiny checkpoints)."""

    name: Literal["parler"] = "parler"
    model_path: str
    """Local folder of the checkpoint (``config.json``, weights, tokenizer)."""
    device: str = "cuda"
    dtype: Literal["float32", "float16", "bfloat16"] = "bfloat16"
    description: str = (
        "A {gender} speaker delivers a {emotion} line at a {speed} pace with a {pitch} voice, "
        "in a very clear recording with no background noise."
    )
    """Parler-TTS description template; fields: gender, emotion, speed, pitch."""
    seed: int = Field(default=0, ge=0)


def description_for(plan: SpeechPlan, template: str) -> str:
    """The Parler-TTS description of a planned delivery.

    >>> description_for(SpeechPlan("Hi!", "happy", "male", "fast", "low"), ParlerConfig.model_fields["description"].default)
    'A male speaker delivers a happy line at a fast pace with a low-pitched voice, in a very clear recording with no background noise.'
    """
    return template.format(
        gender=plan.gender,
        emotion=plan.emotion,
        speed=_SPEED_WORDS.get(plan.speed, plan.speed),
        pitch=_PITCH_WORDS.get(plan.pitch, plan.pitch),
    )


@SPEECH_EXPERTS.register("parler")
class ParlerSpeechExpert(SpeechExpert[ParlerConfig]):
    name: ClassVar[str] = "parler"
    config_model: ClassVar[type[ExpertConfig]] = ParlerConfig
    runs_on: ClassVar[str] = "gpu"

    def __init__(self, config: ParlerConfig) -> None:
        super().__init__(config)
        self._model: Any = None
        self._tokenizer: Any = None
        self._family = ""
        self._weights: dict[str, str] | None = None

    def describe(self) -> str:
        return (
            "parler: description-conditioned TTS (Parler-TTS class) from a local transformers checkpoint; "
            "a VITS (MMS-TTS class) checkpoint is spoken with the planned speed only"
        )

    def identity(self) -> dict[str, Any]:
        if self._weights is None:
            self._weights = folder_weights(self.config.model_path)
        return {**super().identity(), "weights_sha256": self._weights}

    def _architecture(self) -> str:
        config = Path(self.config.model_path) / "config.json"
        try:
            archs = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
        except (OSError, ValueError) as exc:
            raise ExpertError(f"parler: cannot read {config}: {exc}") from exc
        return str(archs[0]) if archs else ""

    def open(self) -> None:
        if self._model is not None:
            return
        import torch

        dtype = getattr(torch, self.config.dtype)
        arch = self._architecture()
        if arch == "ParlerTTSForConditionalGeneration":
            try:
                from parler_tts import ParlerTTSForConditionalGeneration
            except ImportError as exc:
                raise ExpertError(
                    f"parler: {self.config.model_path} is a Parler-TTS checkpoint but the parler_tts package "
                    "is not installed in this environment (pip install parler-tts)"
                ) from exc
            model = ParlerTTSForConditionalGeneration.from_pretrained(
                self.config.model_path, torch_dtype=dtype
            )
            self._family = "parler-tts"
        else:
            from transformers import AutoModelForTextToWaveform

            model = AutoModelForTextToWaveform.from_pretrained(self.config.model_path, dtype=dtype)
            self._family = f"transformers:{arch or 'unknown'}"
        from transformers import AutoTokenizer

        self._tokenizer = AutoTokenizer.from_pretrained(self.config.model_path)
        self._model = model.to(self.config.device).eval()

    def close(self) -> None:
        self._model = None
        self._tokenizer = None
        release_accelerator_memory()

    def speak(self, plan: SpeechPlan, out: Path) -> dict[str, Any]:
        import numpy as np
        import soundfile as sf
        import torch

        self.open()
        model, tokenizer, device = self._model, self._tokenizer, self.config.device
        torch.manual_seed(self.config.seed)
        facts: dict[str, Any] = {"family": self._family}
        with torch.inference_mode():
            if self._family == "parler-tts":
                description = description_for(plan, self.config.description)
                desc = tokenizer(description, return_tensors="pt").input_ids.to(device)
                prompt = tokenizer(plan.text, return_tensors="pt").input_ids.to(device)
                wave = model.generate(input_ids=desc, prompt_input_ids=prompt)
                rate = int(model.config.sampling_rate)
                facts |= {"description": description, "not_rendered": []}
            else:
                if hasattr(model, "speaking_rate"):
                    model.speaking_rate = _VITS_RATE.get(plan.speed, 1.0)
                inputs = tokenizer(plan.text, return_tensors="pt").to(device)
                wave = model(**inputs).waveform
                rate = int(model.config.sampling_rate)
                rendered = ["speed"] if hasattr(model, "speaking_rate") else []
                facts["not_rendered"] = [
                    f for f in ("gender", "speed", "pitch", "emotion") if f not in rendered
                ]
        audio = wave.float().cpu().numpy().reshape(-1)
        if audio.size == 0 or not np.isfinite(audio).all():
            raise ExpertError(f"parler: the model returned no usable samples for {plan.text!r}")
        peak = float(np.max(np.abs(audio))) or 1.0
        out.parent.mkdir(parents=True, exist_ok=True)
        sf.write(str(out), (audio / max(peak, 1.0)).astype(np.float32), rate, subtype="PCM_16", format="WAV")
        return facts
