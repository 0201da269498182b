"""Judge drift: re-judge a fixed anchor set every night and compare with scores pinned earlier.

A judge's scores can move without any change to the systems under test: a new model file, another
runtime version, a prompt edit, a decoding change. The anchor set is a handful of fixed candidate
outputs (a folder under ``data/anchors/``, e.g. good, mixed and bad outputs copied from a sample's
reference systems) with the scores one *pinned* judge run gave them (``pinned.json``). Each night
:func:`run_drift_check` judges the anchors again with real model calls and writes
``<judge_dir>/drift.json``:

``status``
    ``identity_changed`` when the judge's identity (model id, revision, weight hashes, decoding and
    framing settings) or the prompt template hash differs from the pinned one (scores are still
    compared and reported); else ``drift`` when the mean absolute shift of the anchors' scores is
    above ``drift.threshold``; else ``ok``; ``unavailable`` when no anchor could be scored (judge
    model missing, every answer invalid, no pinned scores).
``mean_shift`` / ``max_shift``
    Mean and largest absolute difference, over (judge, anchor), between the anchor's score now and
    when pinned; an anchor's score is the mean of its four greedy criterion scores (1-10 scale).
    ``mean_signed_shift`` keeps the sign (positive = the judge is more generous now);
    ``mean_shift_expected`` is the same on the ``judge_expected`` scores when both runs have them.
``by_track``
    The same shifts per judge track (``{track: {"mean_shift", "max_shift", "mean_signed_shift",
    "n_anchors"}}``). The threshold applies to each track's mean on its own, so a track with few
    anchors (speech) is not averaged away by a steady one (text); a reason names the track
    (``track speech: mean absolute shift ...``), and so does an identity change where the pinned
    file says which track's prompt or settings moved.

Real calls, not cached answers: the anchors use their own response cache, one folder per date
(``<cache>/drift/<YYYY-MM-DD>``, older dates are removed), so the first check of a day always calls
the model; a second check on the same day reuses that day's answers (``model_calls`` 0 in
``drift.json``), which is by design: one check per day is what the nightly needs.

Pin (or re-pin after a deliberate judge change) with ``omnieval judge pin-anchors
pipelines/nightly.yaml`` (:func:`pin_anchors`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from omnieval.errors import ConfigError, DataError
from omnieval.judges._tracks import TRACKS
from omnieval.paths import StatePaths

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
PINNED = "pinned.json"
PINNED_FORMAT = 1
STATUSES = ("ok", "drift", "identity_changed", "unavailable")


class DriftSettings(Protocol):
    """The suite's ``drift:`` block as the check reads it (:class:`omnieval.config.DriftConfig`)."""

    @property
    def anchors(self) -> Path | None:
        """Anchor folder: ``manifest.json``, the candidates and ``pinned.json`` (None: none declared)."""
        ...

    @property
    def threshold(self) -> float:
        """Largest mean absolute shift (1-10 scale) that is not drift."""
        ...

    @property
    def panel(self) -> str | None:
        """Panel whose judges re-judge the anchors (None: none declared)."""
        ...


class DriftSuite(Protocol):
    """What the drift check reads of a suite: its ``drift:`` block and its state folder.

    A protocol rather than :class:`omnieval.config.SuiteConfig` itself: the judges sit below the
    suite config in the layers and name only the two facts they use.
    """

    @property
    def drift(self) -> DriftSettings: ...

    @property
    def state(self) -> Path:
        """The suite's state folder (the anchors' cache is the shared one beside it)."""
        ...


@dataclass(frozen=True)
class Anchor:
    """One fixed candidate output: which instance it answers and where its candidate folder is.

    Attributes:
        id: the anchor's id: the manifest entry's, or ``<entry id>.<track>`` for an entry that
            lists several ``tracks`` (one candidate judged once, scored on each track).
        instance_id: the dataset instance the candidate answers.
        index: that instance's index (the candidate layout's ``<index>`` folder).
        track: the judge track that scores it.
        candidate: candidate root (FORMATS.md section 2) holding this anchor's output only.
        system: the "system" the candidate is judged as (the manifest entry's id).
    """

    id: str
    instance_id: str
    index: int
    track: str
    candidate: Path
    system: str = ""

    @property
    def judged_as(self) -> str:
        return self.system or self.id


AnchorTracks = Mapping[str, Sequence[str]]
"""Judge track -> the candidate modalities (layout folders) an anchor on that track must hold.
A benchmark whose tracks are not the registered judge tracks (PRISM's dimensions) gives its own."""


def _registered_tracks() -> dict[str, tuple[str, ...]]:
    return {name: tuple(m.value for m in spec.needs) for name, spec in TRACKS.items()}


def load_anchors(folder: Path, tracks: AnchorTracks | None = None) -> list[Anchor]:
    """Read ``<folder>/manifest.json``; DataError naming the file and entry on any problem.

    An entry names one ``track``, or several ``tracks`` that one judging of its candidate scores
    (a PRISM clip: its stage calls score every dimension); it becomes one anchor per track.
    ``tracks``: the tracks an anchor may name and the modalities its candidate needs (default: the
    registered judge tracks).
    """
    known = dict(tracks) if tracks is not None else _registered_tracks()
    path = Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: anchor manifest not found") from None
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None
    entries = manifest.get("anchors") if isinstance(manifest, dict) else None
    if not isinstance(entries, list) or not entries:
        raise DataError(f"{path}: expected a non-empty 'anchors' list")
    anchors: list[Anchor] = []
    seen: set[str] = set()
    for k, entry in enumerate(entries):
        where = f"{path}: anchors[{k}]"
        if not isinstance(entry, dict):
            raise DataError(f"{where}: expected an object")
        for name in ("id", "instance_id", "index", "candidate"):
            if name not in entry:
                raise DataError(f"{where}: missing field {name!r}")
        if ("track" in entry) == ("tracks" in entry):
            raise DataError(f"{where}: give either 'track' or a list 'tracks'")
        aid = str(entry["id"])
        if aid in seen:
            raise DataError(f"{where}.id: duplicate anchor id {aid!r}")
        seen.add(aid)
        several = "tracks" in entry
        names = entry["tracks"] if several else [entry["track"]]
        if not isinstance(names, list) or not names or len(set(map(str, names))) != len(names):
            raise DataError(f"{where}.tracks: expected a non-empty list of distinct track names")
        index = entry["index"]
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise DataError(f"{where}.index: expected a non-negative integer, got {index!r}")
        rel = Path(str(entry["candidate"]))
        candidate = (Path(folder) / rel).resolve()
        if rel.is_absolute() or not candidate.is_relative_to(Path(folder).resolve()):
            raise DataError(f"{where}.candidate: {rel} must be a path inside {folder}")
        for track_name in map(str, names):
            if track_name not in known:
                raise DataError(
                    f"{where}.track: unknown judge track {track_name!r} (known: {', '.join(sorted(known))})"
                )
            for modality in known[track_name]:
                if not (candidate / modality / str(index)).is_dir():
                    raise DataError(f"{where}.candidate: {candidate / modality / str(index)} not found")
            anchor_id = f"{aid}.{track_name}" if several else aid
            anchors.append(Anchor(anchor_id, str(entry["instance_id"]), index, track_name, candidate, aid))
    return anchors


class JudgedPanel(Protocol):
    """What judging the anchors with a panel returns (a benchmark's :class:`JudgeOutput` has it)."""

    @property
    def judgments(self) -> pd.DataFrame:
        """One row per (system, instance, track, judge): ``status``, ``scores``, ``expected_scores``."""
        ...

    @property
    def lineage(self) -> Mapping[str, Any]:
        """The panel's lineage: ``judges`` (identity and ``roles`` per track) and ``prompts``."""
        ...

    @property
    def model_calls(self) -> int: ...

    @property
    def cache_hits(self) -> int: ...


PanelJudge = Callable[
    [Sequence[Any], Mapping[str, Path], str, Path, "Callable[[str, int, int], None] | None"], JudgedPanel
]
"""``judge(instances, candidates, panel, cache_dir, progress)``: the suite's benchmark judging the
anchors as its judge stage judges systems (its judge inputs, and for the speech cascade its audio
describer). Without one the anchors go through :func:`omnieval.judges.run_judges` with the
registered tracks' defaults, which has no audio describer: speech anchors settle not_applicable."""


@dataclass(frozen=True)
class AnchorRun:
    """The anchors judged once.

    Attributes:
        judges: judge id -> identity (``model``, ``revision``, ``weights_sha256``,
            ``settings_sha256``, ``prompt_sha256``).
        scores: anchor id -> judge id -> ``{"status", "scores", "expected"}`` (criterion -> value;
            ``expected`` empty when the judge reports no probabilities).
        panel: the panel's name.
        model_calls: requests sent to a model (0 when every answer came from the day's cache).
        cache_hits: answers read from the day's cache.
    """

    judges: dict[str, dict[str, Any]]
    scores: dict[str, dict[str, dict[str, Any]]]
    panel: str
    model_calls: int
    cache_hits: int


def _sha256_json(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge_anchors(
    anchors: Sequence[Anchor],
    instances: Sequence[Any],
    *,
    panel: str,
    cache_dir: Path,
    progress: Callable[[str, int, int], None] | None = None,
    judge: PanelJudge | None = None,
) -> AnchorRun:
    """Judge every anchor with ``panel``'s judges for its track (through ``cache_dir``'s cache).

    ``progress``: ``progress(label, done, total)`` in model calls (as :func:`run_judges` reports).
    ``judge``: how the suite's benchmark judges (:data:`PanelJudge`); None = :func:`run_judges`.
    """
    from omnieval.judges._run import run_judges

    by_id = {str(i.id): i for i in instances}
    missing = [a.instance_id for a in anchors if a.instance_id not in by_id]
    if missing:
        raise DataError(f"anchor instances not in the dataset: {', '.join(missing)}")
    for a in anchors:
        if int(by_id[a.instance_id].index) != a.index:
            raise DataError(
                f"anchor {a.id}: instance {a.instance_id} has index {by_id[a.instance_id].index}, not {a.index}"
            )
    wanted = list(dict.fromkeys(a.instance_id for a in anchors))
    transitions = [by_id[i] for i in wanted]
    # Each anchor is a "system" whose folder holds one output: the other (anchor, instance) pairs
    # settle as missing outputs without a model call. Anchors of one multi-track entry share it.
    candidates = {a.judged_as: a.candidate for a in anchors}
    result: JudgedPanel
    if judge is None:
        result = run_judges(transitions, candidates, panel=panel, cache_dir=cache_dir, progress=progress)
    else:
        result = judge(transitions, candidates, panel, cache_dir, progress)
    panel_name = _panel_name(result, panel)
    lineage = result.lineage
    tracks = {a.track for a in anchors}
    judges: dict[str, dict[str, Any]] = {}
    for jid, info in lineage.get("judges", {}).items():
        roles = {t: r for t, r in info.get("roles", {}).items() if t in tracks}
        if not roles:
            continue
        judges[jid] = {
            "id": jid,
            "model": info.get("model", ""),
            "revision": info.get("revision", ""),
            "weights_sha256": dict(info.get("weights_sha256", {})),
            "settings_sha256": _sha256_json(roles),
            "settings_sha256_by_track": {t: _sha256_json(r) for t, r in sorted(roles.items())},
            "prompt_sha256": {
                t: lineage["prompts"][t]["sha256"] for t in sorted(roles) if t in lineage.get("prompts", {})
            },
        }
    wanted_pairs = {(a.judged_as, a.instance_id, a.track): a.id for a in anchors}
    scores: dict[str, dict[str, dict[str, Any]]] = {}
    for row in result.judgments.itertuples(index=False):
        anchor_id = wanted_pairs.get((row.system, row.instance_id, row.track))
        if anchor_id is None or row.judge not in judges:
            continue
        scores.setdefault(anchor_id, {})[str(row.judge)] = {
            "status": str(row.status),
            "scores": {k: float(v) for k, v in json.loads(row.scores).items()},
            "expected": {k: float(v) for k, v in json.loads(row.expected_scores or "{}").items()},
        }
    return AnchorRun(judges, scores, panel_name, result.model_calls, result.cache_hits)


def _panel_name(result: JudgedPanel, asked: str) -> str:
    """The panel's name as its run reports it (a panel given as a file path has a ``name``)."""
    named = getattr(result, "panel", None)
    if isinstance(named, str) and named:
        return named
    if "panel" in result.judgments.columns and len(result.judgments):
        return str(result.judgments["panel"].iloc[0])
    return asked


def _anchor_mean(values: Mapping[str, float], track_name: str) -> float | None:
    """Mean of a track's criteria, or None unless every criterion has a value; on a track whose
    verdicts score only the criteria their row activates (a PRISM dimension: its active cells), or
    an unregistered one, the mean of the values given."""
    spec = TRACKS.get(track_name)
    if spec is None or not spec.every_criterion:
        return sum(float(v) for v in values.values()) / len(values) if values else None
    criteria = spec.criteria
    if not all(c in values for c in criteria):
        return None
    return sum(float(values[c]) for c in criteria) / len(criteria)


def compare_runs(
    current: Mapping[str, Any], pinned: Mapping[str, Any], *, threshold: float
) -> dict[str, Any]:
    """Drift verdict from two anchor runs in the ``pinned.json`` shape (pure; see the module docstring).

    Args:
        current: ``{"judges": {...}, "anchors": {anchor: {judge: {"status", "scores", "expected"}}},
            "tracks": {anchor: track}}`` of tonight's run.
        pinned: the same shape, from ``pinned.json``.
        threshold: largest mean absolute shift (1-10 scale) that is not drift.

    Returns:
        ``status``, ``threshold``, ``mean_shift``, ``max_shift``, ``mean_signed_shift``,
        ``mean_shift_expected``, ``n_anchors`` (comparable (judge, anchor) pairs), ``reasons`` and
        ``anchors`` (per anchor and judge: pinned, current and shift).
    """
    reasons: list[str] = []
    identity_changed = False
    cur_judges, pin_judges = current.get("judges", {}), pinned.get("judges", {})
    # The tracks the pinned anchors judge: a judge's identity on other tracks (pinned with a larger
    # set, e.g. a subset of the shipped anchors) says nothing about these anchors' scores.
    anchored = {str(t) for aid, t in pinned.get("tracks", {}).items() if aid in pinned.get("anchors", {})}
    for jid in sorted(set(cur_judges) | set(pin_judges)):
        if jid not in cur_judges:
            reasons.append(f"judge {jid} was pinned but did not judge the anchors tonight")
            identity_changed = True
            continue
        if jid not in pin_judges:
            reasons.append(f"judge {jid} judged the anchors but has no pinned scores")
            identity_changed = True
            continue
        for field in ("model", "revision", "weights_sha256", "settings_sha256", "prompt_sha256"):
            now, then = _on_tracks(cur_judges[jid], pin_judges[jid], field, anchored)
            if now != then:
                identity_changed = True
                label = "prompt template" if field == "prompt_sha256" else field
                moved = [
                    t
                    for t in _tracks_that_moved(cur_judges[jid], pin_judges[jid], field)
                    if not anchored or t in anchored
                ]
                where = f" on track {', '.join(moved)}" if moved else ""
                reasons.append(f"judge {jid}: {label} changed{where} ({then!r} -> {now!r})")

    tracks: Mapping[str, str] = {**pinned.get("tracks", {}), **current.get("tracks", {})}
    shifts: list[float] = []
    track_shifts: dict[str, list[float]] = {}
    expected_shifts: list[float] = []
    details: list[dict[str, Any]] = []
    for aid in sorted(pinned.get("anchors", {})):
        for jid, then in sorted(pinned["anchors"][aid].items()):
            now = current.get("anchors", {}).get(aid, {}).get(jid)
            track_name = tracks.get(aid, "text")
            was = _anchor_mean(then.get("scores", {}), track_name)
            if was is None:
                continue
            is_ = _anchor_mean(now.get("scores", {}), track_name) if now else None
            if is_ is None:
                status = now.get("status") if now else "not judged"
                reasons.append(f"anchor {aid} ({jid}): no valid verdict tonight ({status})")
                continue
            shift = is_ - was
            shifts.append(shift)
            track_shifts.setdefault(track_name, []).append(shift)
            entry: dict[str, Any] = {
                "anchor": aid,
                "judge": jid,
                "pinned": was,
                "current": is_,
                "shift": shift,
            }
            e_was = _anchor_mean(then.get("expected", {}), track_name)
            e_is = _anchor_mean(now.get("expected", {}), track_name) if now else None
            if e_was is not None and e_is is not None:
                entry.update(pinned_expected=e_was, current_expected=e_is, shift_expected=e_is - e_was)
                expected_shifts.append(e_is - e_was)
            details.append(entry)

    n = len(shifts)
    mean_shift = sum(abs(s) for s in shifts) / n if n else None
    out: dict[str, Any] = {
        "threshold": threshold,
        "mean_shift": mean_shift,
        "max_shift": max(abs(s) for s in shifts) if n else None,
        "mean_signed_shift": sum(shifts) / n if n else None,
        "mean_shift_expected": (
            sum(abs(s) for s in expected_shifts) / len(expected_shifts) if expected_shifts else None
        ),
        "n_anchors": n,
        "by_track": {t: _shift_summary(values) for t, values in sorted(track_shifts.items())},
        "anchors": details,
    }
    drifted = [
        f"track {t}: mean absolute shift {summary['mean_shift']:.3f} > threshold {threshold:g}"
        for t, summary in out["by_track"].items()
        if summary["mean_shift"] > threshold
    ]
    if identity_changed:
        status = "identity_changed"
        reasons.extend(drifted)
    elif not n:
        status = "unavailable"
        reasons.append("no anchor could be compared with its pinned score")
    elif drifted:
        status = "drift"
        reasons.extend(drifted)
    else:
        status = "ok"
    out["status"] = status
    out["reasons"] = reasons
    return out


def _shift_summary(shifts: Sequence[float]) -> dict[str, Any]:
    """Mean and largest absolute shift, signed mean and count of one track's (judge, anchor) pairs."""
    return {
        "mean_shift": sum(abs(s) for s in shifts) / len(shifts),
        "max_shift": max(abs(s) for s in shifts),
        "mean_signed_shift": sum(shifts) / len(shifts),
        "n_anchors": len(shifts),
    }


def _on_tracks(
    now: Mapping[str, Any], then: Mapping[str, Any], field: str, tracks: set[str]
) -> tuple[Any, Any]:
    """A judge identity ``field`` tonight and as pinned, limited to ``tracks`` where the field is per
    track (``prompt_sha256``; ``settings_sha256`` through ``settings_sha256_by_track`` when both
    recorded it); the whole field otherwise, or when ``tracks`` is empty."""
    if not tracks or field not in ("settings_sha256", "prompt_sha256"):
        return now.get(field), then.get(field)
    key = "settings_sha256_by_track" if field == "settings_sha256" else field
    a, b = now.get(key), then.get(key)
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return now.get(field), then.get(field)
    return {t: a.get(t) for t in sorted(tracks)}, {t: b.get(t) for t in sorted(tracks)}


def _tracks_that_moved(now: Mapping[str, Any], then: Mapping[str, Any], field: str) -> list[str]:
    """The tracks whose part of a per-track identity ``field`` differs between two judge identities.

    ``prompt_sha256`` is per track in both; ``settings_sha256`` is one hash over every track, so the
    tracks come from ``settings_sha256_by_track`` when both runs recorded it (pins older than that
    field name no track). Other fields (model, weights) are the judge's, not a track's: none.
    """
    if field == "prompt_sha256":
        a, b = now.get(field), then.get(field)
    elif field == "settings_sha256":
        a, b = now.get("settings_sha256_by_track"), then.get("settings_sha256_by_track")
    else:
        return []
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return []
    return sorted(t for t in set(a) | set(b) if a.get(t) != b.get(t))


def _as_document(run: AnchorRun, anchors: Sequence[Anchor]) -> dict[str, Any]:
    return {
        "panel": run.panel,
        "judges": run.judges,
        "anchors": run.scores,
        "tracks": {a.id: a.track for a in anchors},
    }


def _day_cache(config: DriftSuite, day: dt.date) -> Path:
    """The anchors' cache folder for ``day``; other days' folders are removed (one day is kept)."""
    root = StatePaths(config.state).cache / "drift"
    folder = root / day.isoformat()
    if root.is_dir():
        for other in root.iterdir():
            if other.is_dir() and other.name != folder.name:
                shutil.rmtree(other, ignore_errors=True)
    return folder


def anchors_folder(config: DriftSuite) -> Path:
    """The suite's anchor folder (its own, else its benchmark's, filled in when the suite loads)."""
    if config.drift.anchors is None:
        raise ConfigError("drift.anchors: this suite's benchmark declares no drift anchors; name a folder")
    return Path(config.drift.anchors)


def _drift_panel(config: DriftSuite) -> str:
    if config.drift.panel is None:
        raise ConfigError("drift.panel: this suite's benchmark has no default judge panel; name one")
    return config.drift.panel


def pinned_path(config: DriftSuite) -> Path:
    """``<drift.anchors>/pinned.json``."""
    return anchors_folder(config) / PINNED


def pin_anchors(
    config: DriftSuite,
    instances: Sequence[Any],
    *,
    today: dt.date | None = None,
    judge: PanelJudge | None = None,
    anchor_tracks: AnchorTracks | None = None,
) -> dict[str, Any]:
    """Judge the anchors now and write the result as ``pinned.json`` (the new reference).

    Run this only after a deliberate judge change (new model, prompt or settings), then commit the
    file; the nightly compares against it from then on. ``anchor_tracks``: as :func:`load_anchors`.
    """
    from omnieval.jsonio import write_json_atomic

    day = today or dt.date.today()
    anchors = load_anchors(anchors_folder(config), anchor_tracks)
    run = judge_anchors(
        anchors, instances, panel=_drift_panel(config), cache_dir=_day_cache(config, day), judge=judge
    )
    document = {"format": PINNED_FORMAT, "pinned_on": day.isoformat(), **_as_document(run, anchors)}
    write_json_atomic(pinned_path(config), document, sort_keys=True, ensure_ascii=False)
    return document


def run_drift_check(
    config: DriftSuite,
    instances: Sequence[Any],
    *,
    today: dt.date | None = None,
    out: Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    judge: PanelJudge | None = None,
    anchor_tracks: AnchorTracks | None = None,
) -> dict[str, Any]:
    """Re-judge the anchors and compare with ``pinned.json``; write and return ``drift.json``.

    Args:
        config: the suite (its ``drift`` block: anchors folder, threshold, panel).
        instances: the suite's dataset instances (the anchors name theirs by id).
        today: the date that salts the cache (default: today); a new date means new model calls.
        out: where to write; default ``<judge_dir>/drift.json``.
        progress: ``progress(label, done, total)`` in model calls.
        judge: how the suite's benchmark judges (:data:`PanelJudge`); None = :func:`run_judges`.
        anchor_tracks: the benchmark's anchor tracks (:func:`load_anchors`); None = the registered ones.

    Returns:
        ``{"status", "threshold", "mean_shift", "max_shift", "mean_signed_shift",
        "mean_shift_expected", "n_anchors", "reasons", "anchors", "judge", "pinned", "date",
        "model_calls", "cache_hits"}``.
    """
    from omnieval.backends.llm import BackendError
    from omnieval.jsonio import write_json_atomic

    day = today or dt.date.today()
    target = out or StatePaths(config.state).judge_dir / "drift.json"
    threshold = float(config.drift.threshold)
    pin_file = pinned_path(config)
    pinned: dict[str, Any] = {}
    base: dict[str, Any] = {"threshold": threshold, "date": day.isoformat(), "panel": config.drift.panel}
    try:
        if not pin_file.is_file():
            raise DataError(f"{pin_file}: no pinned anchor scores (run omnieval judge pin-anchors SUITE)")
        try:
            pinned = json.loads(pin_file.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise DataError(f"{pin_file}: not valid JSON: {exc}") from None
        anchors = load_anchors(anchors_folder(config), anchor_tracks)
        run = judge_anchors(
            anchors,
            instances,
            panel=_drift_panel(config),
            cache_dir=_day_cache(config, day),
            progress=progress,
            judge=judge,
        )
    except (DataError, BackendError) as exc:
        document = {
            **base,
            "status": "unavailable",
            "mean_shift": None,
            "max_shift": None,
            "n_anchors": 0,
            "reasons": [str(exc)],
            "judge": {},
            "pinned": {"judges": pinned.get("judges", {}), "pinned_on": pinned.get("pinned_on")},
            "model_calls": 0,
            "cache_hits": 0,
        }
    else:
        current = _as_document(run, anchors)
        verdict = compare_runs(current, pinned, threshold=threshold)
        document = {
            **base,
            **verdict,
            "judge": run.judges,
            "pinned": {"judges": pinned.get("judges", {}), "pinned_on": pinned.get("pinned_on")},
            "model_calls": run.model_calls,
            "cache_hits": run.cache_hits,
        }
    for key in ("mean_shift", "max_shift"):
        value = document.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            document[key] = None
    target.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(target, document, sort_keys=True, ensure_ascii=False)
    log.info("judge drift: %s (mean shift %s)", document["status"], document.get("mean_shift"))
    return document
