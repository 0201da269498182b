"""Reference systems for OmniACBench: a ceiling that renders the target where espeak-ng can, and a floor.

``oracle-control`` reads each instance's target on purpose (``uses_ground_truth``) and speaks the
script with espeak-ng settings that realise it: speaking rate, whisper (the default voice
resynthesized from a noise source, :func:`whisperize`), the target reading of a heteronym,
elderly/adult female/male voices, and the British voice for ``UK``. What espeak-ng cannot
do it leaves neutral and says so per instance in the lineage: emotion (no emotional voices) and the
Indian and Australian accents (no such English voices; ``espeak-ng --voices=en`` lists none).

``neutral`` sees only the condition's task inputs and speaks the script in the default voice at the
default rate, whatever the context: the floor a context-blind system scores.

Both write ``<out_root>/speech/<index>/generated.wav`` (FORMATS.md section 2).
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from omnieval.backends.tts import EspeakProsody, SpeechRequest, SynthesisError, synthesize
from omnieval.benchmarks.acbench._conditions import task_inputs
from omnieval.benchmarks.acbench._record import AcbenchInstance, HeteronymRef
from omnieval.candidates import Modality, output_path
from omnieval.systems import (
    GenerationRequest,
    GenerationSummary,
    System,
    SystemConfig,
    SystemSpec,
    clear_index,
    record_missing,
)

#: espeak-ng settings shared by both systems; only the labels a target needs differ from ``normal``.
ACBENCH_PROSODY = EspeakProsody(
    rate_wpm=(("slow", 100), ("elderly", 125), ("normal", 150), ("fast", 230)),
    version="acbench-espeak-v1",
)

#: espeak-ng language per accent target; accents missing here have no English espeak-ng voice.
ACCENT_VOICES: dict[str, str] = {"UK": "en-gb"}

#: How a ``missing.txt`` starts for a row a system left out of its evaluated subset on purpose
#: (e.g. ``cascade``'s ``limit``): the metrics stage scores no row for it instead of ``missing_output``.
NOT_EVALUATED = "not evaluated:"

#: ARPAbet -> espeak-ng phoneme mnemonics, for heteronyms not in ``_heteronyms.HETERONYMS``.
_ARPABET_TO_ESPEAK: dict[str, str] = {
    "AA": "A:", "AE": "a", "AH": "V", "AO": "O:", "AW": "aU", "AY": "aI", "EH": "E", "ER": "3:",
    "EY": "eI", "IH": "I", "IY": "i:", "OW": "oU", "OY": "OI", "UH": "U", "UW": "u:",
    "B": "b", "CH": "tS", "D": "d", "DH": "D", "F": "f", "G": "g", "HH": "h", "JH": "dZ", "K": "k",
    "L": "l", "M": "m", "N": "n", "NG": "N", "P": "p", "R": "r", "S": "s", "SH": "S", "T": "t",
    "TH": "T", "V": "v", "W": "w", "Y": "j", "Z": "z", "ZH": "Z",
}  # fmt: skip


class OracleControlConfig(SystemConfig):
    """``kind: oracle-control``: no settings of its own (``seed`` and ``path`` are accepted and
    unused, as for every reference kind, so existing suites and their cache keys stay as they were)."""

    kind: Literal["oracle-control"] = "oracle-control"


class NeutralConfig(SystemConfig):
    """``kind: neutral``: no settings of its own."""

    kind: Literal["neutral"] = "neutral"


@dataclass(frozen=True)
class Delivery:
    """How one script is spoken: the espeak-ng request and settings, and whether the target is in it.

    Attributes:
        request: Text (possibly with ``[[phonemes]]``) and the labels espeak-ng settings come from.
        prosody: The settings table (language, voice variants, rates).
        rendered: True when the target value is realised; False when it is left neutral.
        note: What was done, or why the target could not be rendered.
        unvoice: Replace the voice source with noise after synthesis (:func:`whisperize`).
    """

    request: SpeechRequest
    prosody: EspeakProsody
    rendered: bool
    note: str
    unvoice: bool = False


def whisperize(
    samples: npt.NDArray[np.float32],
    *,
    n_fft: int = 512,
    hop: int = 128,
    lifter: int = 30,
    flatten: float = 0.8,
    seed: int = 0,
) -> npt.NDArray[np.float32]:
    """Noise-excited resynthesis: keep each frame's spectral envelope, drop the voicing.

    Whispered speech has the vocal tract's resonances but no vocal-fold vibration. Each frame's
    envelope is the cepstrally smoothed log spectrum (quefrencies below ``lifter`` samples, which
    removes the harmonics of any pitch above ``sr / lifter`` Hz) with its shape scaled by
    ``flatten``; it shapes white noise, and the frames are overlap-added with a Hann window. The
    result has the input's RMS.

    Flattening matters: exponentiating a smoothed log spectrum with its full range gives formant
    peaks narrow enough that noise through them looks periodic to pYIN (it then reports "voiced"
    frames at 1.3-2 kHz). With ``flatten=0.8`` the sample's scripts measure VFR <= 0.3 while the
    words stay recognisable (Whisper tiny.en WER 0.19 on the sample's scripts).

    Args:
        samples: Mono signal, shape ``(n,)``.
        n_fft: Frame length in samples.
        hop: Hop in samples (``n_fft / 4`` keeps Hann overlap-add flat).
        lifter: Cepstral coefficients kept per side.
        flatten: Factor on the envelope's log-magnitude shape (1 = unchanged, 0 = white noise).
        seed: Noise seed (the output is deterministic for a seed).

    Returns:
        The whispered signal, shape ``(n,)``, float32 in [-1, 1].

    Example:
        >>> t = np.arange(16000) / 16000
        >>> out = whisperize((0.5 * np.sin(2 * np.pi * 150 * t)).astype(np.float32))
        >>> out.shape, bool(np.abs(out).max() <= 1.0)
        ((16000,), True)
    """
    from numpy.lib.stride_tricks import sliding_window_view

    y = np.asarray(samples, dtype=np.float64)
    pad = n_fft // 2
    padded = np.pad(y, (pad, pad + hop))
    window = np.hanning(n_fft + 1)[:-1]
    frames = sliding_window_view(padded, n_fft)[::hop] * window
    log_mag = np.log(np.abs(np.fft.rfft(frames, axis=1)) + 1e-9)
    cepstrum = np.fft.irfft(log_mag, n=n_fft, axis=1)
    cepstrum[:, lifter : n_fft - lifter + 1] = 0.0
    cepstrum[:, 1:] *= flatten
    envelope = np.exp(np.fft.rfft(cepstrum, axis=1).real)
    noise = np.random.default_rng(seed).standard_normal(padded.shape[0])
    noise_frames = sliding_window_view(noise, n_fft)[::hop] * window
    shaped = np.fft.irfft(envelope * np.fft.rfft(noise_frames, axis=1), n=n_fft, axis=1) * window
    out = np.zeros_like(padded)
    norm = np.zeros_like(padded)
    for i, frame in enumerate(shaped):
        out[i * hop : i * hop + n_fft] += frame
        norm[i * hop : i * hop + n_fft] += window**2
    out = (out / np.maximum(norm, 1e-3))[pad : pad + y.shape[0]]
    rms_in, rms_out = float(np.sqrt(np.mean(y**2))), float(np.sqrt(np.mean(out**2)))
    if rms_out > 0:
        out *= rms_in / rms_out
    peak = float(np.max(np.abs(out))) if out.size else 0.0
    if peak > 1.0:
        out /= peak
    return out.astype(np.float32)


def arpabet_to_espeak(phones: Sequence[str]) -> str:
    """espeak-ng mnemonics for ARPAbet ``phones``, primary stress before the stressed vowel.

    Stress digits are honoured when present; without them the first vowel is stressed.

    >>> arpabet_to_espeak(["L", "EH1", "D"]), arpabet_to_espeak(["B", "AE", "S"])
    ("l'Ed", "b'as")
    """
    bases = [p.rstrip("012") for p in phones]
    stressed = next((i for i, p in enumerate(phones) if p.endswith("1")), None)
    if stressed is None:
        stressed = next((i for i, b in enumerate(bases) if b[0] in "AEIOU"), None)
    out = []
    for i, base in enumerate(bases):
        symbol = _ARPABET_TO_ESPEAK[base]
        if i != stressed:
            # Unstressed AH and ER are reduced vowels (schwa, r-coloured schwa) in espeak-ng's inventory.
            symbol = {"AH": "@", "ER": "3"}.get(base, symbol)
        out.append(("'" if i == stressed else "") + symbol)
    return "".join(out)


def _heteronym_phonemes(ref: HeteronymRef) -> tuple[str, str]:
    """espeak-ng mnemonics of the target reading and where they came from."""
    from omnieval.benchmarks.acbench._heteronyms import HETERONYMS

    for entry in HETERONYMS:
        reading = entry.readings.get(ref.reading)
        if (
            entry.word == ref.word.lower()
            and reading is not None
            and reading.arpabet == _unstressed(ref.target_phones)
        ):
            return reading.espeak_phonemes, "the heteronym list's espeak-ng phonemes"
    return arpabet_to_espeak(ref.target_phones), "espeak-ng phonemes converted from the manifest's ARPAbet"


def _unstressed(phones: Sequence[str]) -> tuple[str, ...]:
    return tuple(p.rstrip("012") for p in phones)


def oracle_delivery(
    instance: AcbenchInstance, script: str, *, prosody: EspeakProsody = ACBENCH_PROSODY
) -> Delivery:
    """The espeak-ng delivery that realises ``instance``'s target value when espeak-ng can.

    Args:
        instance: The instance (its feature and target value are read: ground truth).
        script: The text to speak.
        prosody: Base settings; targets change the speed label, voice variant or language.

    Returns:
        The delivery; ``rendered`` is False for targets espeak-ng has no means for.
    """
    feature, target = instance.feature, instance.target_value
    plain = SpeechRequest(script)
    if feature == "speech_rate":
        return Delivery(
            SpeechRequest(script, speed=target), prosody, True, f"{target}: {prosody.rate(target)} wpm"
        )
    if feature == "phonation":
        # espeak-ng's whisper variants keep some voicing (17-20 %), which pYIN finds on many sentences
        # (VFR 0.2-0.6 measured on the sample's scripts); the default voice resynthesized from
        # noise keeps the words and loses the voicing.
        note = f"whisper: voice {prosody.voice(plain)}, then noise-excited resynthesis (whisperize)"
        return Delivery(plain, prosody, True, note, unvoice=True)
    if feature == "pronunciation":
        ref = instance.heteronym
        if ref is None:
            return Delivery(plain, prosody, False, "neutral: no heteronym reference on the instance")
        from omnieval.benchmarks.acbench._heteronyms import Reading, espeak_markup

        phonemes, source = _heteronym_phonemes(ref)
        stand_in = Reading(ref.reading, "", _unstressed(ref.target_phones), phonemes, script, "")
        try:
            text = espeak_markup(script, ref.word, stand_in)
        except ValueError as exc:
            return Delivery(plain, prosody, False, f"neutral: {exc}")
        return Delivery(SpeechRequest(text), prosody, True, f"{ref.word!r} as [[{phonemes}]] ({source})")
    if feature == "timbre":
        female = target.endswith("female")
        gender = "female" if female else "male"
        if target.startswith("elderly"):
            # espeak-ng's grandma/grandpa variants add a vocal tremor; a lower pitch and slower rate go with them.
            aged = dataclasses.replace(prosody, female_variant="grandma", male_variant="grandpa")
            request = SpeechRequest(script, gender=gender, speed="elderly", pitch="low")
            return Delivery(
                request,
                aged,
                True,
                f"{target}: voice {aged.voice(request)}, low pitch, {aged.rate('elderly')} wpm",
            )
        request = SpeechRequest(script, gender=gender)
        return Delivery(request, prosody, True, f"{target}: voice {prosody.voice(request)}")
    if feature == "accent":
        language = ACCENT_VOICES.get(target)
        if language is None:
            return Delivery(plain, prosody, False, f"neutral: espeak-ng has no {target} English voice")
        local = dataclasses.replace(prosody, language=language)
        return Delivery(plain, local, True, f"{target}: voice {local.voice(plain)}")
    if feature == "emotion":
        return Delivery(plain, prosody, False, "neutral: espeak-ng has no emotional voices")
    return Delivery(plain, prosody, False, f"neutral: no espeak-ng control for feature {feature!r}")


def render_delivery(delivery: Delivery, path: Path) -> None:
    """Speak ``delivery`` into the WAV ``path`` with espeak-ng (then :func:`whisperize` when asked).

    Nominal espeak-ng rates, no closed-loop correction: the rate is the control under test. Used by
    the reference systems here and by generating kinds that plan a delivery (``cascade``).

    Raises:
        SynthesisError: espeak-ng is missing or failed.
    """
    synthesize(delivery.request, path, delivery.prosody, controlled_rate=False)
    if delivery.unvoice:
        import soundfile as sf

        wave, rate = sf.read(str(path), dtype="float32")
        tmp = path.with_name(path.stem + ".unvoiced.partial.wav")
        sf.write(str(tmp), whisperize(wave), rate, subtype="PCM_16", format="WAV")
        tmp.replace(path)


class _EspeakSystem(System):
    """Speaks every instance's script with the delivery :meth:`deliver` picks, one WAV per index."""

    def __init__(self, prosody: EspeakProsody = ACBENCH_PROSODY) -> None:
        self.prosody = prosody

    @abstractmethod
    def deliver(self, instance: AcbenchInstance, condition: str) -> Delivery:
        """How to speak ``instance`` under ``condition``."""

    @abstractmethod
    def describe(
        self, condition: str, deliveries: Sequence[tuple[AcbenchInstance, Delivery]]
    ) -> dict[str, Any]:
        """The system's lineage for one run."""

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """Write ``<out_root>/speech/<index>/generated.wav`` for every instance.

        Args:
            request: The instances (OmniACBench's, in any order), the candidate folder (FORMATS.md
                section 2), the input condition (one of ``CONDITIONS``) and the progress callback.

        Returns:
            The summary: clips written, clips missing (``speech``: count; a ``missing.txt`` says why)
            and the lineage.
        """
        instances: Sequence[AcbenchInstance] = request.instances
        condition = request.condition
        counts: dict[str, int] = {}
        deliveries: list[tuple[AcbenchInstance, Delivery]] = []
        written = 0
        for done, inst in enumerate(instances, start=1):
            delivery = self.deliver(inst, condition)
            deliveries.append((inst, delivery))
            clear_index(request.out_root, inst.index)
            try:
                render_delivery(delivery, output_path(request.out_root, Modality.SPEECH, inst.index))
                written += 1
            except SynthesisError as exc:  # the clip is missing; missing.txt says why
                record_missing(request.out_root, Modality.SPEECH, inst.index, str(exc), counts)
            request.tick(done)
        lineage = {
            "tts": "espeak-ng",
            "tts_prosody": self.prosody.version,
            "condition": condition,
            **self.describe(condition, deliveries),
        }
        return GenerationSummary(self.kind, self.kind, request.out_root, written, counts, lineage)


class OracleControl(_EspeakSystem):
    """Speaks each script with the instance's target delivery where espeak-ng can (a ceiling).

    The target is rendered under every condition; ``lineage["instances"][id]`` says per instance
    whether it was rendered and how, ``targets_rendered`` / ``targets_left_neutral`` sum it up.
    """

    kind: ClassVar[str] = "oracle-control"
    uses_ground_truth: ClassVar[bool] = True
    config_model: ClassVar[type[SystemSpec]] = OracleControlConfig

    def deliver(self, instance: AcbenchInstance, condition: str) -> Delivery:
        """The target delivery of ``instance`` (see :func:`oracle_delivery`)."""
        return oracle_delivery(instance, task_inputs(instance, condition).script, prosody=self.prosody)

    def describe(
        self, condition: str, deliveries: Sequence[tuple[AcbenchInstance, Delivery]]
    ) -> dict[str, Any]:
        """Which targets were rendered and which left neutral, overall and per instance."""
        per_instance = {
            inst.id: {
                "feature": inst.feature,
                "target_value": inst.target_value,
                "rendered": d.rendered,
                "how": d.note,
            }
            for inst, d in deliveries
        }

        def targets(rendered: bool) -> list[str]:
            return sorted({f"{i.feature}={i.target_value}" for i, d in deliveries if d.rendered == rendered})

        return {
            "targets_rendered": targets(True),
            "targets_left_neutral": targets(False),
            "instances": per_instance,
        }


class Neutral(_EspeakSystem):
    """Speaks each script in the default voice at the default rate, ignoring all context (a floor)."""

    kind: ClassVar[str] = "neutral"
    config_model: ClassVar[type[SystemSpec]] = NeutralConfig

    def deliver(self, instance: AcbenchInstance, condition: str) -> Delivery:
        """The condition's script in the default voice; nothing else of the inputs is used."""
        inputs = task_inputs(instance, condition)
        return Delivery(SpeechRequest(inputs.script), self.prosody, False, "default voice and rate")

    def describe(
        self, condition: str, deliveries: Sequence[tuple[AcbenchInstance, Delivery]]
    ) -> dict[str, Any]:
        """The one voice and rate every clip used."""
        request = SpeechRequest("x")
        return {
            "voice": self.prosody.voice(request),
            "rate_wpm": self.prosody.rate(request.speed),
            "inputs_used": ["script"],
        }
