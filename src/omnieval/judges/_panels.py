"""Judge panels as configuration: which judge scores which track, with which backend and settings.

Panels are YAML files a benchmark ships in its own package and registers by name with
:func:`register_panels` when it is imported (the name is the suite config's key), the same way it
registers its tracks: a panel names tracks, so it belongs to the benchmark that declares them, and
this package ships none. A suite may also name a YAML file path for a custom panel. Files are
validated strictly (frozen pydantic models, unknown keys rejected) when loaded, before any model
starts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from omnieval.backends.llm import BackendConfig, Decoding
from omnieval.errors import ConfigError, validation_problems
from omnieval.judges._render import Framing
from omnieval.judges._rubrics import has_template
from omnieval.judges._tracks import track_names
from omnieval.registry import Registry


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class JudgeConfig(_Strict):
    """One judge model with its runtime and protocol settings."""

    id: str = Field(min_length=1)
    """Judge id written to the scores table (the hub id for the paper's judges)."""
    model: str = Field(min_length=1)
    """Model id: hub id, or a label for local files."""
    revision: str = ""
    """Pinned commit, tag or package version; '' resolves the local hub cache's ``main`` when present."""
    backend: BackendConfig
    decoding: Decoding = Decoding()
    """Sampling settings, sent exactly as given: a field left out is not sent (the backend's or
    API's default). A paper panel states what its paper states and nothing more."""
    framing: Framing = Framing()
    batch_size: int = Field(default=1, ge=1)
    """Requests handed to the backend at once (servers run them concurrently)."""
    retries: int = Field(default=3, ge=0)
    """Extra attempts after a transient failure (timeout, HTTP 429/5xx, connection lost)."""
    retry_backoff_s: float = Field(default=2.0, ge=0)
    """First wait before a retry; doubles each time."""
    notes: str = ""
    """Protocol details that are not settings (e.g. what the server's environment must provide)."""
    unavailable: str = ""
    """Why omnieval cannot build this judge's model itself, and what it needs instead (e.g. an
    architecture that exists only as remote code, served by a vLLM release with its own
    implementation). Every other paper judge's architecture is built from a tiny config and driven
    to ``generate`` in the tests; this states why this one is not. ``omnieval judge panels`` lists
    it; a run still sends the judge its requests where that runtime is installed."""

    @model_serializer(mode="wrap")
    def _dump_without_empty_reason(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Judges without a reason dump as before the field existed: panel hashes in lineage and
        # the backend-group keys built from dumps stay the same.
        data: dict[str, Any] = handler(self)
        if not self.unavailable:
            data.pop("unavailable", None)
        return data


class TrackConfig(_Strict):
    """A track's judges, or why the track cannot be judged with this panel."""

    judges: tuple[JudgeConfig, ...] = ()
    input: Literal["native", "cascade"] = "native"
    """``native``: the judge gets the media; ``cascade`` (tracks with a registered cascade template,
    or a named ``prompt`` for it): it gets measured attributes of the candidate media instead (an ASR
    transcript and delivery for audio, similarities and picture statistics for an image)."""
    unavailable: str | None = None
    """Reason the track is not judged (its records become ``not_applicable``)."""
    prompt: str = ""
    """A named prompt variant the benchmark registered for this track (e.g. storybench's ``cpu``:
    a reference-guided rubric with measured facts for a small judge), used instead of the
    ``input``'s own template; '' = the ``input``'s template. ``input`` still says what the judge
    gets (``cascade``: the audio's analysis)."""

    @model_serializer(mode="wrap")
    def _dump_without_empty_prompt(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Tracks without a prompt variant dump as before the field existed, so the hashes of panels
        # that do not name one (the paper's) stay the same.
        data: dict[str, Any] = handler(self)
        if not self.prompt:
            data.pop("prompt", None)
        return data

    @model_validator(mode="after")
    def _judges_or_reason(self) -> TrackConfig:
        if bool(self.judges) == bool(self.unavailable):
            raise ValueError("give either judges or an 'unavailable' reason")
        return self

    @property
    def variant(self) -> str:
        """The template variant this track's judges are prompted with (``prompt``, else ``input``)."""
        return self.prompt or self.input


class PanelConfig(_Strict):
    """A judge panel: per-track judges plus the repair model."""

    name: str
    description: str = ""
    include: tuple[str, ...] = ()
    """Other panels whose tracks' judges are added to this one (``paper`` = A + B + C)."""
    tracks: dict[str, TrackConfig] = Field(default_factory=dict)
    """Track name (one of the registered benchmark's tracks) -> its judges or unavailability."""
    repair: JudgeConfig | None = None
    """Model that fixes the format of unreadable answers after judging; None = no repair stage."""

    @field_validator("tracks")
    @classmethod
    def _known_tracks(cls, value: dict[str, TrackConfig]) -> dict[str, TrackConfig]:
        known = track_names()
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(f"unknown track(s) {', '.join(unknown)}; known: {', '.join(known)}")
        for name, cfg in value.items():
            # A cascade input needs a cascade prompt: the track's own ``cascade`` template, or the
            # named prompt variant the benchmark registered for it (storybench's ``cpu-cascade``).
            cascade_prompt = has_template(name, "cascade") or bool(
                cfg.prompt and has_template(name, cfg.prompt)
            )
            if cfg.input == "cascade" and not cascade_prompt:
                raise ValueError(f"track {name}: the benchmark has no cascade input for it")
            if cfg.prompt and not has_template(name, cfg.prompt):
                raise ValueError(f"track {name}: the benchmark has no {cfg.prompt!r} prompt for it")
            # Known tracks are every registered benchmark's; those of a benchmark without these
            # rubrics (another benchmark's) have no template to prompt a judge with.
            if cfg.judges and not has_template(name, cfg.variant):
                raise ValueError(f"track {name}: the registered rubrics have no {cfg.variant} prompt for it")
        return value

    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()

    def judges(self) -> list[tuple[str, JudgeConfig]]:
        """(track, judge) pairs in track order."""
        return [(t, j) for t, cfg in self.tracks.items() for j in cfg.judges]


@dataclass(frozen=True)
class ShippedPanel:
    """Where a registered panel's YAML lives, and which benchmark shipped it."""

    benchmark: str
    folder: Traversable
    file: str

    @property
    def source(self) -> str:
        """The file named in error messages: the benchmark's folder and the file name."""
        return str(self.folder.joinpath(self.file))


PANELS: Registry[ShippedPanel] = Registry("judge panel")
"""Shipped panels by name: empty until a benchmark's package is imported and registers its own."""


def register_panels(folder: Traversable, names: Iterable[str], *, benchmark: str) -> None:
    """Register the panels ``<folder>/<name>.yaml`` under their names; a benchmark's package calls this.

    The files are read only when a panel is loaded. Registering the same file again under the same
    name (a module imported twice) is a no-op; a name another file already holds is refused, so two
    benchmarks cannot silently shadow each other's panels.

    Raises:
        ConfigError: ``names`` is empty, or a name is already registered for another file.
    """
    names = tuple(names)
    if not names:
        raise ConfigError(f"{benchmark}: no judge panels to register")
    for name in names:
        entry = ShippedPanel(benchmark, folder, f"{name}.yaml")
        if name in PANELS:
            if PANELS.get(name) == entry:
                continue
            raise ConfigError(
                f"{benchmark}: judge panel {name!r} is already registered ({PANELS.get(name).source})"
            )
        PANELS.register(name)(entry)


def panel_names() -> list[str]:
    """Names of the shipped judge panels (those the imported benchmarks registered), sorted."""
    return PANELS.names()


def _read_yaml(name: str) -> tuple[dict[str, Any], str]:
    import yaml

    if name in PANELS:
        shipped = PANELS.get(name)
        source = shipped.source
        text = shipped.folder.joinpath(shipped.file).read_text(encoding="utf-8")
    else:
        path = Path(name)
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            known = ", ".join(panel_names()) or "none registered (import the benchmark's package)"
            raise ConfigError(
                f"unknown judge panel {name!r}; known: {known} (or a path to a panel YAML file)"
            )
        source, text = str(path), path.read_text(encoding="utf-8")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    return raw, source


def _validate(raw: dict[str, Any], source: str) -> PanelConfig:
    try:
        return PanelConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(validation_problems(f"{source}: invalid judge panel", exc)) from None


def load_panel(name: str, _seen: tuple[str, ...] = ()) -> PanelConfig:
    """Load a shipped panel by name (or a YAML file by path), resolving ``include``."""
    if name in _seen:
        raise ConfigError(f"judge panel {name!r} includes itself ({' -> '.join((*_seen, name))})")
    raw, source = _read_yaml(name)
    panel = _validate(raw, source)
    if not panel.include:
        return panel
    tracks: dict[str, dict[str, Any]] = {}
    repair = panel.repair
    for included in (load_panel(n, (*_seen, name)) for n in panel.include):
        if repair is None:
            repair = included.repair
        elif included.repair is not None and included.repair != repair:
            raise ConfigError(f"{source}: included panel {included.name!r} uses a different repair model")
        for track_name, cfg in included.tracks.items():
            entry = tracks.setdefault(track_name, {"judges": [], "input": cfg.input, "unavailable": None})
            if cfg.prompt:
                entry.setdefault("prompt", cfg.prompt)
            if entry["input"] != cfg.input or entry.get("prompt", "") != cfg.prompt:
                raise ConfigError(
                    f"{source}: included panels disagree on the {track_name} track's input or prompt"
                )
            if cfg.unavailable:
                entry["unavailable"] = entry["unavailable"] or cfg.unavailable
            entry["judges"].extend(j.model_dump(mode="json") for j in cfg.judges)
    for track_name, cfg in panel.tracks.items():
        tracks[track_name] = cfg.model_dump(mode="json")
    for entry in tracks.values():
        if entry["judges"]:
            entry["unavailable"] = None
    merged = {
        "name": panel.name,
        "description": panel.description,
        "tracks": tracks,
        "repair": repair.model_dump(mode="json") if repair else None,
    }
    result = _validate(merged, source)
    for track_name, cfg in result.tracks.items():
        track_ids = [j.id for j in cfg.judges]
        if len(set(track_ids)) != len(track_ids):
            raise ConfigError(f"{source}: judge listed twice in the {track_name} track")
    return result


def describe_panels(benchmark: str | None = None) -> list[dict[str, Any]]:
    """Each shipped panel (those ``benchmark`` registered, when given): description, per-track judges
    (id, backend) or unavailability, repair model."""
    out: list[dict[str, Any]] = []
    for name in panel_names():
        if benchmark is not None and PANELS.get(name).benchmark != benchmark:
            continue
        panel = load_panel(name)
        tracks = {
            t: {
                "input": cfg.input,
                "unavailable": cfg.unavailable,
                "judges": [
                    {
                        "id": j.id,
                        "model": j.model,
                        "backend": j.backend.kind,
                        **({"unavailable": j.unavailable} if j.unavailable else {}),
                    }
                    for j in cfg.judges
                ],
            }
            for t, cfg in panel.tracks.items()
        }
        out.append(
            {
                "name": name,
                "description": panel.description,
                "tracks": tracks,
                "repair": panel.repair.id if panel.repair else None,
            }
        )
    return out


def pin_revisions(panel: PanelConfig, pins: dict[str, str]) -> PanelConfig:
    """A copy of ``panel`` where judges without a revision get the registry's pin for their id."""
    if not pins:
        return panel

    def pin(judge: dict[str, Any]) -> dict[str, Any]:
        if not judge.get("revision") and pins.get(judge["id"]):
            judge = {**judge, "revision": pins[judge["id"]]}
        return judge

    data = panel.model_dump(mode="json")
    for track_cfg in data["tracks"].values():
        track_cfg["judges"] = [pin(j) for j in track_cfg["judges"]]
    if data.get("repair"):
        data["repair"] = pin(data["repair"])
    return PanelConfig.model_validate(data)
