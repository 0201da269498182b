"""Reference systems built from the dataset itself: ceilings and floors for every metric.

``oracle`` and ``shuffled`` read the evaluation targets on purpose (``uses_ground_truth``); they
bound the scale. ``copy-current`` sees only the task inputs, like a real system.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Literal

from omnieval.backends.tts import EspeakProsody, SpeechRequest, SynthesisError, synthesize
from omnieval.benchmarks.storybench._records import TargetSpeech, Transition
from omnieval.candidates import Modality, output_path
from omnieval.systems import (
    SYSTEMS,
    GenerationRequest,
    GenerationSummary,
    Progress,
    System,
    SystemConfig,
    SystemSpec,
    clear_index,
    record_missing,
    write_image,
    write_text,
)


class OracleConfig(SystemConfig):
    """``kind: oracle``: no settings of its own (``seed`` and ``path`` are accepted and unused, as
    for every reference kind, so existing suites and their cache keys stay as they were)."""

    kind: Literal["oracle"] = "oracle"


class CopyCurrentConfig(SystemConfig):
    """``kind: copy-current``: no settings of its own."""

    kind: Literal["copy-current"] = "copy-current"


class ShuffledConfig(SystemConfig):
    """``kind: shuffled``: ``seed`` chooses the donor transitions (0 when unset)."""

    kind: Literal["shuffled"] = "shuffled"


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


def _tts_lineage(controlled: bool) -> dict[str, object]:
    prosody = EspeakProsody()
    return {
        "tts": "espeak-ng",
        "tts_prosody": prosody.version,
        "speech_attributes_controlled": controlled,
        "emotion_rendered": False,
    }


def _transitions(request: GenerationRequest) -> Sequence[Transition]:
    """The request's instances: storybench's reference kinds read the transitions themselves."""
    return request.instances


def _write_candidates(
    transitions: Sequence[Transition],
    out_root: Path,
    progress: Progress | None,
    pick: Callable[[Transition], tuple[str, Path, TargetSpeech]],
    *,
    controlled: bool,
) -> dict[str, int]:
    """Write each transition's narration, picture and spoken line as ``pick`` chooses them.

    The reference systems differ only in where the three outputs come from (the targets, the
    current page, another transition); clearing the index first, speaking through espeak-ng and
    recording a failed synthesis as missing are the same for all of them.

    Returns:
        Missing outputs per modality (what :class:`GenerationSummary` reports).
    """
    counts: dict[str, int] = {}
    for done, tr in enumerate(transitions, start=1):
        text, image, speech = pick(tr)
        clear_index(out_root, tr.index)
        write_text(out_root, tr.index, text)
        write_image(out_root, tr.index, image)
        _speak(out_root, tr.index, speech, controlled=controlled, counts=counts)
        if progress:
            progress(done, len(transitions))
    return counts


class OracleSystem(System):
    """Ground-truth narration and image; the target line spoken with the target attributes."""

    kind: ClassVar[str] = "oracle"
    uses_ground_truth: ClassVar[bool] = True
    config_model: ClassVar[type[SystemSpec]] = OracleConfig

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """Write each transition's target narration, picture and spoken line."""
        transitions, out_root = _transitions(request), request.out_root
        counts = _write_candidates(
            transitions,
            out_root,
            request.progress,
            lambda tr: (tr.next_text, tr.next_image, tr.target_speech),
            controlled=True,
        )
        return GenerationSummary("oracle", "oracle", out_root, len(transitions), counts, _tts_lineage(True))


def _first_sentence(text: str) -> str:
    import re

    parts = re.split(r"(?<=[.!?])\s+", " ".join(text.split()), maxsplit=1)
    return parts[0] if parts and parts[0] else text


class CopyCurrentSystem(System):
    """Repeats the current page: its narration, its image, and its first sentence in the default voice."""

    kind: ClassVar[str] = "copy-current"
    config_model: ClassVar[type[SystemSpec]] = CopyCurrentConfig

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """Write each transition's current page again (task inputs only)."""
        transitions, out_root = _transitions(request), request.out_root

        def current_page(tr: Transition) -> tuple[str, Path, TargetSpeech]:
            inputs = tr.task_inputs()
            # The target line is ground truth, not a task input: say the current page's first sentence.
            line = _first_sentence(inputs.current_text)
            speech = TargetSpeech(
                name="narrator", line=line, emotion="neutral", speed="normal", pitch="normal", gender="female"
            )
            return inputs.current_text, inputs.current_image, speech

        counts = _write_candidates(transitions, out_root, request.progress, current_page, controlled=False)
        return GenerationSummary(
            "copy-current", "copy-current", out_root, len(transitions), counts, _tts_lineage(False)
        )


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


class ShuffledSystem(System):
    """Another transition's ground truth (another book's where possible): a floor for every metric.

    Args:
        seed: Seed of the donor assignment (:func:`derangement`).
    """

    kind: ClassVar[str] = "shuffled"
    uses_ground_truth: ClassVar[bool] = True
    config_model: ClassVar[type[SystemSpec]] = ShuffledConfig

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """Write each transition's donor's targets (see :func:`derangement`)."""
        transitions, out_root = _transitions(request), request.out_root
        donors = derangement(transitions, self.seed)

        def donor_targets(tr: Transition) -> tuple[str, Path, TargetSpeech]:
            donor = donors[tr.index]
            return donor.next_text, donor.next_image, donor.target_speech

        counts = _write_candidates(transitions, out_root, request.progress, donor_targets, controlled=True)
        lineage = {
            **_tts_lineage(True),
            "seed": self.seed,
            "donors": {tr.id: donors[tr.index].id for tr in transitions},
        }
        return GenerationSummary("shuffled", "shuffled", out_root, len(transitions), counts, lineage)


SYSTEMS.register("oracle")(OracleSystem)
SYSTEMS.register("copy-current")(CopyCurrentSystem)
SYSTEMS.register("shuffled")(ShuffledSystem)
