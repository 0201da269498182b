"""Reference systems built from the dataset itself: ceilings and floors for every metric.

``oracle`` and ``shuffled`` read the evaluation targets on purpose (``uses_ground_truth``); they
bound the scale. ``copy-current`` sees only the task inputs, like a real system.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from omnieval.backends.tts import EspeakProsody, SpeechRequest, SynthesisError, synthesize
from omnieval.benchmarks.storybench._records import TargetSpeech, Transition
from omnieval.candidates import Modality, output_path
from omnieval.systems import (
    SYSTEMS,
    GenerationRequest,
    GenerationSummary,
    System,
    SystemConfig,
    SystemSpec,
    clear_index,
    record_missing,
    write_image,
    write_text,
)


class _ReferenceConfig(SystemConfig):
    """A storybench reference kind: ``seed`` and ``path`` are accepted on every entry, so existing
    suites and their cache keys stay as they were, and its system is built with only those of them
    it takes (:attr:`taken`)."""

    taken: ClassVar[tuple[str, ...]] = ()

    def factory_arguments(self, *, condition: str, modalities: Sequence[str]) -> dict[str, Any]:
        given = super().factory_arguments(condition=condition, modalities=modalities)
        return {name: value for name, value in given.items() if name in self.taken}


class OracleConfig(_ReferenceConfig):
    """``kind: oracle``: no settings of its own."""

    kind: Literal["oracle"] = "oracle"


class CopyCurrentConfig(_ReferenceConfig):
    """``kind: copy-current``: no settings of its own."""

    kind: Literal["copy-current"] = "copy-current"


class ShuffledConfig(_ReferenceConfig):
    """``kind: shuffled``: ``seed`` chooses the donor transitions (0 when unset)."""

    kind: Literal["shuffled"] = "shuffled"
    taken: ClassVar[tuple[str, ...]] = ("seed",)


def _speak(root: Path, index: int, speech: TargetSpeech, *, controlled: bool, counts: dict[str, int]) -> None:
    request = (
        SpeechRequest(speech.line, gender=speech.gender, speed=speech.speed, pitch=speech.pitch)
        if controlled
        else SpeechRequest(speech.line)  # espeak-ng's default delivery: no attribute control
    )
    try:
        synthesize(
            request, output_path(root, Modality.SPEECH, index), EspeakProsody(), controlled_rate=controlled
        )
    except SynthesisError as exc:
        record_missing(root, Modality.SPEECH, index, str(exc), counts)


def _targets(tr: Transition) -> tuple[str, Path, TargetSpeech]:
    """A transition's target narration, picture and spoken line."""
    return tr.next_text, tr.next_image, tr.target_speech


class _ReferenceSystem(System):
    """A reference kind: each transition's narration, picture and spoken line taken from the dataset.

    The reference systems differ only in where the three outputs come from (:meth:`picks`: the
    targets, the current page, another transition) and whether the line is spoken with its
    requested delivery (``controlled``); clearing the index first, speaking through espeak-ng and
    recording a failed synthesis as missing are the same for all of them.
    """

    controlled: ClassVar[bool] = True
    """Whether the line is spoken with the picked delivery (else espeak-ng's default voice)."""

    @abstractmethod
    def picks(self, transitions: Sequence[Transition]) -> list[tuple[str, Path, TargetSpeech]]:
        """Each transition's narration, picture and spoken line, in order."""

    def lineage(self, transitions: Sequence[Transition]) -> dict[str, object]:
        """What the generation summary records besides the counts."""
        return {
            "tts": "espeak-ng",
            "tts_prosody": EspeakProsody().version,
            "speech_attributes_controlled": self.controlled,
            "emotion_rendered": False,
        }

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """Write each transition's picked outputs; a failed synthesis counts as a missing clip."""
        # The request's instances: storybench's reference kinds read the transitions themselves.
        transitions: Sequence[Transition] = request.instances
        out_root, progress = request.out_root, request.progress
        counts: dict[str, int] = {}
        for done, (tr, (text, image, speech)) in enumerate(
            zip(transitions, self.picks(transitions), strict=True), start=1
        ):
            clear_index(out_root, tr.index)
            write_text(out_root, tr.index, text)
            write_image(out_root, tr.index, image)
            _speak(out_root, tr.index, speech, controlled=self.controlled, counts=counts)
            if progress:
                progress(done, len(transitions))
        lineage = self.lineage(transitions)
        return GenerationSummary(self.kind, self.kind, out_root, len(transitions), counts, lineage)


class OracleSystem(_ReferenceSystem):
    """Ground-truth narration and image; the target line spoken with the target attributes."""

    kind: ClassVar[str] = "oracle"
    uses_ground_truth: ClassVar[bool] = True
    config_model: ClassVar[type[SystemSpec]] = OracleConfig

    def picks(self, transitions: Sequence[Transition]) -> list[tuple[str, Path, TargetSpeech]]:
        return [_targets(tr) for tr in transitions]


def _first_sentence(text: str) -> str:
    import re

    parts = re.split(r"(?<=[.!?])\s+", " ".join(text.split()), maxsplit=1)
    return parts[0] if parts and parts[0] else text


class CopyCurrentSystem(_ReferenceSystem):
    """Repeats the current page: its narration, its image, and its first sentence in the default voice."""

    kind: ClassVar[str] = "copy-current"
    config_model: ClassVar[type[SystemSpec]] = CopyCurrentConfig
    controlled: ClassVar[bool] = False

    def picks(self, transitions: Sequence[Transition]) -> list[tuple[str, Path, TargetSpeech]]:
        """Each transition's current page again (task inputs only)."""
        out = []
        for tr in transitions:
            inputs = tr.task_inputs()
            # The target line is ground truth, not a task input: say the current page's first sentence.
            line = _first_sentence(inputs.current_text)
            speech = TargetSpeech(
                name="narrator", line=line, emotion="neutral", speed="normal", pitch="normal", gender="female"
            )
            out.append((inputs.current_text, inputs.current_image, speech))
        return out


def derangement(transitions: Sequence[Transition], seed: int) -> dict[int, Transition]:
    """Map every row to another row's transition, preferring one from a different book.

    Deterministic for a seed. With a single transition there is nothing to shuffle, so the row maps
    to itself (documented floor degenerates to the oracle, which the caller can see in lineage).
    """
    rng = random.Random(seed)
    result: dict[int, Transition] = {}
    for tr in transitions:
        other_books = [o for o in transitions if o.book != tr.book or o.source != tr.source]
        others = other_books or [o for o in transitions if o.index != tr.index] or [tr]
        result[tr.index] = rng.choice(others)
    return result


class ShuffledSystem(_ReferenceSystem):
    """Another transition's ground truth (another book's where possible): a floor for every metric.

    Args:
        seed: Seed of the donor assignment (:func:`derangement`).
    """

    kind: ClassVar[str] = "shuffled"
    uses_ground_truth: ClassVar[bool] = True
    config_model: ClassVar[type[SystemSpec]] = ShuffledConfig

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def picks(self, transitions: Sequence[Transition]) -> list[tuple[str, Path, TargetSpeech]]:
        """Each transition's donor's targets (see :func:`derangement`)."""
        donors = derangement(transitions, self.seed)
        return [_targets(donors[tr.index]) for tr in transitions]

    def lineage(self, transitions: Sequence[Transition]) -> dict[str, object]:
        donors = derangement(transitions, self.seed)  # the same donors: seeded
        return {
            **super().lineage(transitions),
            "seed": self.seed,
            "donors": {tr.id: donors[tr.index].id for tr in transitions},
        }


SYSTEMS.register("oracle")(OracleSystem)
SYSTEMS.register("copy-current")(CopyCurrentSystem)
SYSTEMS.register("shuffled")(ShuffledSystem)
