"""Omni-StoryBench's four judge tracks and what a judge is shown of a page turn, registered on import.

The criterion keys are read from ``benchmark.yaml`` (``judge.criteria``, PROTOCOLS.md appendix
E.3-E.4), the one place they are written; this module adds what the declaration does not say:
which candidate outputs each track judges, and :func:`page_turn_inputs`, the reference side of a
judge's inputs for one transition. Importing it registers both with the judges
(:func:`omnieval.judges.register_tracks`), before :mod:`._rubrics` registers the wording, and
registers the judge panels in ``panels/`` (:func:`omnieval.judges.register_panels`).

Example:
    >>> TRACKS["text"].criteria[1]
    'natural_flow_from_current_narration'
    >>> [m.value for m in TRACKS["integrated"].needs]
    ['text', 'image', 'speech']
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from omnieval.benchmarks._spec import SPEC_FILE, load_spec, spec_beside
from omnieval.benchmarks.storybench._records import Transition
from omnieval.candidates import Modality
from omnieval.errors import ConfigError
from omnieval.judges import JudgeInputs, TrackSpec, register_panels, register_tracks

NEEDS: Final[dict[str, tuple[Modality, ...]]] = {
    "text": (Modality.TEXT,),
    "image": (Modality.IMAGE,),
    "speech": (Modality.SPEECH,),
    "integrated": (Modality.TEXT, Modality.IMAGE, Modality.SPEECH),
}
"""Track -> the candidate outputs its judge sees (a record without one is ``missing_output``)."""


def page_turn_inputs(item: Transition) -> JudgeInputs:
    """The reference side of :class:`~omnieval.judges.JudgeInputs` for one transition.

    The current page, the book and the next page's conditions as the system saw them, plus the
    next page's narration, image and target speech as ground truth. The candidate fields are left
    for the runner to fill.
    """
    return JudgeInputs(
        metadata=item.metadata.as_dict(),
        condition=item.condition.as_dict(),
        current_text=item.current_text,
        reference_text=item.next_text,
        reference_speech=item.target_speech.as_dict(),
        current_image=item.current_image,
        reference_image=item.next_image,
    )


def _declared() -> tuple[str, dict[str, TrackSpec]]:
    """The benchmark's name and its tracks: keys from ``benchmark.yaml``, outputs from :data:`NEEDS`."""
    path = spec_beside(__file__)
    if path is None:
        raise ConfigError(f"{__name__}: no {SPEC_FILE} beside the storybench package")
    spec = load_spec(path)
    judge = spec.judge
    if judge is None or set(judge.tracks) != set(NEEDS) or set(judge.criteria) != set(NEEDS):
        raise ConfigError(f"{path}: judge.tracks and judge.criteria must name exactly {', '.join(NEEDS)}")
    return spec.name, {t: TrackSpec(t, tuple(judge.criteria[t]), NEEDS[t]) for t in judge.tracks}


BENCHMARK, TRACKS = _declared()

register_tracks(TRACKS.values(), benchmark=BENCHMARK, reference=page_turn_inputs)

PANELS: Final[tuple[str, ...]] = ("paper-a", "paper-b", "paper-c", "paper", "cpu", "cpu-served")
"""The judge panels shipped in ``panels/`` beside this module (the paper's three judges, ``paper``
= all three, ``cpu``, the small local default, and ``cpu-served``, the same judge behind
llama.cpp's OpenAI-compatible server), registered with the judges on import."""

register_panels(Path(__file__).with_name("panels"), PANELS, benchmark=BENCHMARK)
