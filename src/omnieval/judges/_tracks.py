"""Judge tracks as data each benchmark registers: its tracks' criterion keys and the outputs they judge.

The judges package holds no benchmark's tracks. A benchmark's package calls :func:`register_tracks`
when it is imported, before it registers its rubrics (whose answer schema lists the keys). The
tracks are kept per benchmark (:class:`BenchmarkTracks`, read back with :func:`tracks_of`), so any
number of benchmarks' tracks live in one process: storybench's four single-candidate tracks beside
PRISM's four pairwise dimensions. Registering again for the same benchmark replaces only its own.

Readers that know the benchmark pass it (``track(name, benchmark)``, ``track_names(benchmark)``);
the panel runner, the ledger and the drift check name a track only, and a bare name is looked up
across every registered benchmark (:data:`TRACKS`). A name two benchmarks register with different
facts is ambiguous there, and the error says to name the benchmark; nothing is silently shadowed.

Facts only: which keys a verdict holds (in schema order), whether every verdict holds every key,
which candidate modalities a track needs, and the JSON schema of a verdict. The wording shown to
judges is the benchmark's, registered through :func:`omnieval.judges.register_templates`.

Example:
    >>> spec = TrackSpec("tone", ("clarity", "warmth"), (Modality.TEXT,))
    >>> criteria_schema(spec.criteria)["required"]
    ['clarity', 'warmth']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from omnieval.candidates import Modality
from omnieval.errors import ConfigError

SCORE_MIN = 1
SCORE_MAX = 10


@dataclass(frozen=True)
class TrackSpec:
    """One judge track: its name, its criterion keys (in schema order) and the outputs it judges.

    Attributes:
        name: the track (the scores table's ``track`` column).
        criteria: its criterion keys, in schema order (the scores table's ``criterion`` column).
        needs: the candidate outputs its judge is shown (a row without one is ``missing_output``).
        every_criterion: whether every verdict scores every criterion (storybench's tracks). False
            when a verdict scores only the criteria its row activates (a PRISM dimension: the audio
            types a clip is tagged with), so a mean over one verdict is over the criteria it holds.
    """

    name: str
    criteria: tuple[str, ...]
    needs: tuple[Modality, ...]
    every_criterion: bool = True


@dataclass(frozen=True)
class BenchmarkTracks:
    """One benchmark's judge tracks, as it registered them (:func:`register_tracks`).

    Attributes:
        benchmark: the benchmark (the scores rows' ``benchmark`` column).
        tracks: track name -> spec, in the benchmark's order (the order its rows are written in).
        reference: the benchmark's row -> :class:`~omnieval.judges.JudgeInputs` function (what a
            single-candidate judge is shown of a row besides the candidate); None when the benchmark
            judges its rows another way (PRISM's blind pairs).
    """

    benchmark: str
    tracks: Mapping[str, TrackSpec]
    reference: Callable[[Any], Any] | None = None

    def names(self) -> tuple[str, ...]:
        """The track names, in the benchmark's order."""
        return tuple(self.tracks)

    def track(self, name: str) -> TrackSpec:
        """The track called ``name``, or ``ValueError`` listing this benchmark's tracks."""
        try:
            return self.tracks[name]
        except KeyError:
            known = ", ".join(self.tracks)
            raise ValueError(
                f"benchmark {self.benchmark!r} has no judge track {name!r}; known: {known}"
            ) from None


_registry: dict[str, BenchmarkTracks] = {}
"""Benchmark -> its tracks, in the order the benchmarks registered (empty until one is imported)."""


class _AllTracks(Mapping[str, TrackSpec]):
    """Every registered benchmark's tracks by bare name: a live, read-only view of the registry."""

    def __getitem__(self, name: str) -> TrackSpec:
        found = {b.benchmark: b.tracks[name] for b in _registry.values() if name in b.tracks}
        if not found:
            raise KeyError(name)
        if len(set(found.values())) > 1:
            raise ValueError(
                f"judge track {name!r} is registered by {', '.join(found)} with different criteria "
                "or outputs; name the benchmark to read it"
            )
        return next(iter(found.values()))

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return f"TRACKS({', '.join(self._names())})"

    @staticmethod
    def _names() -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for b in _registry.values() for n in b.tracks))


TRACKS: Mapping[str, TrackSpec] = _AllTracks()
"""Every registered benchmark's tracks by name (benchmarks in registration order, each one's tracks
in its own order): the view of readers that name a track but not its benchmark. Empty until a
benchmark's package is imported; reading a name two benchmarks register differently raises
``ValueError``."""


def register_tracks(
    tracks: Iterable[TrackSpec], *, benchmark: str, reference: Callable[[Any], Any] | None = None
) -> BenchmarkTracks:
    """Register ``tracks`` as ``benchmark``'s judge tracks; a benchmark's package calls this when imported.

    Other benchmarks' tracks are kept: each benchmark owns its own. ``reference`` is the benchmark's
    row -> :class:`~omnieval.judges.JudgeInputs` function (what a judge is shown of a dataset row
    besides the candidate): the default of :func:`~omnieval.judges.run_judges`. Registering again
    for the same benchmark replaces its tracks (a module reload does that).

    Returns:
        What was registered (also :func:`tracks_of` ``(benchmark)``).

    Raises:
        ConfigError: no tracks, a repeated track name or criterion key, or a track without criteria
            or without outputs to judge.
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
    registered = BenchmarkTracks(benchmark, MappingProxyType({spec.name: spec for spec in specs}), reference)
    _registry[benchmark] = registered
    return registered


def tracks_of(benchmark: str) -> BenchmarkTracks:
    """``benchmark``'s registered tracks; ``ConfigError`` naming the registered benchmarks if none."""
    try:
        return _registry[benchmark]
    except KeyError:
        known = ", ".join(_registry) or "none (import the benchmark's package)"
        raise ConfigError(
            f"benchmark {benchmark!r} registered no judge tracks; registered: {known}"
        ) from None


def track_benchmarks() -> tuple[str, ...]:
    """The benchmarks that registered judge tracks, in registration order."""
    return tuple(_registry)


def registered_reference(benchmark: str) -> Callable[[Any], Any] | None:
    """``benchmark``'s row -> judge inputs function, or None when it registered none."""
    return tracks_of(benchmark).reference


def track_names(benchmark: str | None = None) -> tuple[str, ...]:
    """``benchmark``'s track names in its order; without one, every registered track (:data:`TRACKS`)."""
    return tracks_of(benchmark).names() if benchmark is not None else tuple(TRACKS)


def track(name: str, benchmark: str | None = None) -> TrackSpec:
    """The track called ``name`` (``benchmark``'s when given, else looked up in :data:`TRACKS`).

    Raises:
        ValueError: no such track (the message lists the known ones), or, without ``benchmark``,
            two benchmarks register ``name`` differently.
        ConfigError: ``benchmark`` registered no tracks.
    """
    if benchmark is not None:
        return tracks_of(benchmark).track(name)
    try:
        return TRACKS[name]
    except KeyError:
        known = ", ".join(TRACKS) or "none registered (import the benchmark's package)"
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
    track_name: str,
    *,
    benchmark: str | None = None,
    rationale_max_chars: int | None = None,
    rationale_first: bool = False,
) -> dict[str, Any]:
    """JSON schema of one verdict of a registered track (:func:`criteria_schema` over its keys;
    the track is ``benchmark``'s when given, as in :func:`track`)."""
    return criteria_schema(
        track(track_name, benchmark).criteria,
        rationale_max_chars=rationale_max_chars,
        rationale_first=rationale_first,
    )


UNRECOVERABLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"unrecoverable": {"type": "boolean", "enum": [True]}},
    "required": ["unrecoverable"],
    "additionalProperties": False,
}


def repair_schema(track_name: str, *, benchmark: str | None = None) -> dict[str, Any]:
    """What the repair model may answer: the track's verdict or ``{"unrecoverable": true}``."""
    return {"anyOf": [verdict_schema(track_name, benchmark=benchmark), UNRECOVERABLE_SCHEMA]}
