"""Judge tracks as data a benchmark registers: each track's criterion keys and the outputs it judges.

The judges package holds no benchmark's tracks. A benchmark's package calls :func:`register_tracks`
when it is imported, before it registers its rubrics (whose answer schema lists the keys); the
panel runner, the ledger, the verdict schemas and the panel files then read the tracks back through
:data:`TRACKS`, :func:`track_names` and :func:`track`. As with the rubrics, one benchmark's tracks
are registered at a time: the judges score one benchmark per process, and a second benchmark
registering its own would silently change what every verdict is read against.

Facts only: which keys a verdict must hold (in schema order), which candidate modalities a track
needs, and the JSON schema of a verdict. The wording shown to judges is the benchmark's, registered
through :func:`omnieval.judges.register_templates`.

Example:
    >>> spec = TrackSpec("tone", ("clarity", "warmth"), (Modality.TEXT,))
    >>> criteria_schema(spec.criteria)["required"]
    ['clarity', 'warmth']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from omnieval.candidates import Modality
from omnieval.errors import ConfigError

SCORE_MIN = 1
SCORE_MAX = 10


@dataclass(frozen=True)
class TrackSpec:
    """One judge track: its name, its criterion keys (in schema order) and the outputs it judges."""

    name: str
    criteria: tuple[str, ...]
    needs: tuple[Modality, ...]


_tracks: dict[str, TrackSpec] = {}
_owner: list[str] = []
"""The benchmark whose tracks are in ``_tracks`` (empty: none registered yet)."""
_reference: list[Callable[[Any], Any]] = []
"""The registered benchmark's row -> judge inputs function (empty: it registered none)."""

TRACKS: Mapping[str, TrackSpec] = MappingProxyType(_tracks)
"""The registered tracks by name, in the benchmark's order (a read-only view: empty until a
benchmark's package is imported, then that benchmark's tracks)."""


def register_tracks(
    tracks: Iterable[TrackSpec], *, benchmark: str, reference: Callable[[Any], Any] | None = None
) -> None:
    """Make ``tracks`` the judge tracks; a benchmark's package calls this when imported.

    ``reference`` is the benchmark's row -> :class:`~omnieval.judges.JudgeInputs` function (what a
    judge is shown of a dataset row besides the candidate): the default of
    :func:`~omnieval.judges.run_judges` for callers that judge rows without knowing the benchmark,
    such as the drift check. Registering again for the same benchmark replaces its tracks (a module
    reload does that).

    Raises:
        ConfigError: no tracks, a repeated track name or criterion key, a track without criteria
            or without outputs to judge, or another benchmark registered its tracks already.
    """
    specs = tuple(tracks)
    if not specs:
        raise ConfigError(f"{benchmark}: no judge tracks to register")
    names = [spec.name for spec in specs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"{benchmark}: judge track(s) registered twice: {', '.join(repeated)}")
    for spec in specs:
        if not spec.criteria or len(set(spec.criteria)) != len(spec.criteria):
            raise ConfigError(f"{benchmark}: track {spec.name!r} needs distinct criterion keys")
        if not spec.needs:
            raise ConfigError(f"{benchmark}: track {spec.name!r} names no candidate output to judge")
    if _owner and _owner[0] != benchmark:
        raise ConfigError(f"judge tracks of {_owner[0]!r} are registered; {benchmark!r} cannot add its own")
    _tracks.clear()
    _tracks.update((spec.name, spec) for spec in specs)
    _owner[:] = [benchmark]
    _reference[:] = [reference] if reference is not None else []


def tracks_benchmark() -> str | None:
    """The benchmark whose tracks are registered, or None before any is."""
    return _owner[0] if _owner else None


def registered_reference() -> Callable[[Any], Any] | None:
    """The registered benchmark's row -> judge inputs function, or None when it gave none."""
    return _reference[0] if _reference else None


def track_names() -> tuple[str, ...]:
    """The registered tracks' names, in the benchmark's order (the order rows are written in)."""
    return tuple(_tracks)


def track(name: str) -> TrackSpec:
    """Return the registered track called ``name`` or raise ``ValueError`` listing the known tracks."""
    try:
        return _tracks[name]
    except KeyError:
        known = ", ".join(_tracks) or "none registered (import the benchmark's package)"
        raise ValueError(f"unknown judge track {name!r}; known: {known}") from None


def criteria_schema(
    criteria: Sequence[str], *, rationale_max_chars: int | None = None, rationale_first: bool = False
) -> dict[str, Any]:
    """JSON schema of a verdict over ``criteria``: each maps to ``{"score": 1..10, "rationale": str}``.

    ``rationale_max_chars`` and ``rationale_first`` only shape what constrained decoding generates
    (the CPU judge bounds its output length, and writes its reason before its score so the score can
    follow from it); the ledger validates the same keys regardless of order or length.
    """
    rationale: dict[str, Any] = {"type": "string", "minLength": 1}
    if rationale_max_chars is not None:
        rationale["maxLength"] = rationale_max_chars
    score = {"type": "integer", "enum": list(range(SCORE_MIN, SCORE_MAX + 1))}
    fields = (
        {"rationale": rationale, "score": score}
        if rationale_first
        else {"score": score, "rationale": rationale}
    )
    criterion = {
        "type": "object",
        "properties": fields,
        "required": list(fields),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {key: criterion for key in criteria},
        "required": list(criteria),
        "additionalProperties": False,
    }


def verdict_schema(
    track_name: str, *, rationale_max_chars: int | None = None, rationale_first: bool = False
) -> dict[str, Any]:
    """JSON schema of one verdict of a registered track (:func:`criteria_schema` over its keys)."""
    return criteria_schema(
        track(track_name).criteria, rationale_max_chars=rationale_max_chars, rationale_first=rationale_first
    )


UNRECOVERABLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"unrecoverable": {"type": "boolean", "enum": [True]}},
    "required": ["unrecoverable"],
    "additionalProperties": False,
}


def repair_schema(track_name: str) -> dict[str, Any]:
    """What the repair model may answer: the track's verdict or ``{"unrecoverable": true}``."""
    return {"anyOf": [verdict_schema(track_name), UNRECOVERABLE_SCHEMA]}
