"""``instances.html``: every instance of a run with its inputs, candidates, metrics and judgments.

``report.html`` is aggregate only; this page answers "why did this instance move" without opening
parquet files. It is one self-contained file (inline CSS and vanilla JS, nothing from a CDN) so it
opens from a run folder, an MLflow artifact or a mail attachment alike.

Scale (900 instances x 32 systems) decides the data layout:

- an *index* (instances, the filterable facts per instance and system as small integer codes) is
  embedded in the page and parsed at load; the list is paginated, so the first page renders from
  the index alone;
- the *details* (inputs, candidates, score rows, judge rationales) are grouped into chunks of
  :data:`CHUNK_SIZE` instances, each parsed only when one of its instances is opened. They are
  embedded as inert ``<script type="application/json">`` elements while their total stays under
  ``embed_limit``; above it they become sidecar scripts ``instances_data/<k>.js`` beside the page
  (loaded by a ``<script>`` tag, which works from ``file://`` as well as over HTTP).

Media are linked, never inlined: candidates by their path in the run folder, task inputs by their
path in the dataset folder. ``omnieval view`` serves the dataset under ``_dataset/``; opened as a
file, the page uses the dataset's path relative to the run folder instead.

When the run was compared with an earlier one, each (instance, system) whose candidate changed (by
SHA-256, :mod:`omnieval.reporting._compared`) also carries the compared run's candidate and
judgments; they are linked under ``_compared/`` (served by ``omnieval view``) or relative to the run
folder, and the index lists the changed pairs for the "changed outputs" filter.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.candidates import OUTPUT_FILES, Modality
from omnieval.reporting._compared import COMPARED_ROUTE, candidate_root, changed_outputs
from omnieval.reporting._templates import render, trusted

if TYPE_CHECKING:
    import pandas as pd

INSTANCES_PAGE = "instances.html"
"""File name of the page in a run folder (the report's top movers link to it)."""
DATA_DIR = "instances_data"
"""Folder beside the page holding the detail chunks when they are too large to embed."""
DATASET_ROUTE = "_dataset"
"""URL prefix under which ``omnieval view`` serves the run's dataset folder."""
CHUNK_SIZE = 40
"""Instances per detail chunk: opening one instance parses at most this many instances' details."""
EMBED_LIMIT = 12_000_000
"""Bytes of detail JSON up to which the chunks are embedded in the page itself."""
TEXT_LIMIT = 6_000
"""Characters kept of a text candidate, a raw generation record or an invalid judge answer."""

_SCORE_KEY = ("system", "instance_id", "condition", "track", "component", "panel", "judge", "criterion")
_SCORE_KEY_TAIL = ("subset", "paired_with")
_MEDIA_KINDS = {
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".webp": "image",
    ".gif": "image",
    ".wav": "audio",
    ".mp3": "audio",
    ".flac": "audio",
    ".ogg": "audio",
    ".mp4": "video",
    ".webm": "video",
    ".mov": "video",
}
# Judgment columns the page shows; the others (cache keys, prompt hashes, latency) are bookkeeping.
_JUDGMENT_FIELDS = (
    "track",
    "judge",
    "panel",
    "model",
    "status",
    "stage",
    "swapped",
    "order_first",
    "order",
    "cells",
    "scores",
    "expected_scores",
    "rationales",
    "evidence",
    "error",
    "note",
    "finish_reason",
    "repair_history",
    "normalizations",
)
_JSON_FIELDS = frozenset(
    {
        "order",
        "cells",
        "scores",
        "expected_scores",
        "rationales",
        "evidence",
        "repair_history",
        "normalizations",
    }
)
_VALID = frozenset({"ok", "repaired"})


@dataclass(frozen=True)
class InstanceInputs:
    """What a system saw of one instance under one condition (the benchmark's visible task).

    Attributes:
        instance_id: the dataset id.
        condition: the input condition ('' where the benchmark has none).
        fields: the task as JSON-able data; a media file appears as its path string.
        media: the strings in ``fields`` that are media files (shown with a player, not as text).
    """

    instance_id: str
    condition: str
    fields: Mapping[str, Any]
    media: frozenset[str] = frozenset()


@dataclass(frozen=True)
class InstancesSource:
    """Everything the page is built from; the stage that writes a run folder gathers it.

    Attributes:
        folder: the run folder the page is written into (candidates are linked relative to it).
        scores: the run's scores table (FORMATS.md section 3).
        judgments: the run's ``judgments.parquet`` as a frame, or None when the suite has no judges.
        inputs: the visible task of every instance (and condition); may be empty.
        dataset_root: the dataset folder input media are relative to, or None.
        previous: the compared run's scores table (its values appear beside today's), or None.
        baseline: the compared run's id ('' when there is none).
        title: the page heading (suite and run).
        run_id: this run's id.
        previous_folder: the compared run's folder, whose changed candidates are shown beside
            today's; None when there is no compared run or its folder is gone (the page says so).
        previous_judgments: the compared run's ``judgments.parquet`` (its rationales for a changed
            candidate), or None.
    """

    folder: Path
    scores: pd.DataFrame
    judgments: pd.DataFrame | None = None
    inputs: Sequence[InstanceInputs] = ()
    dataset_root: Path | None = None
    previous: pd.DataFrame | None = None
    baseline: str = ""
    title: str = "instances"
    run_id: str = ""
    previous_folder: Path | None = None
    previous_judgments: pd.DataFrame | None = None


@dataclass
class _Codes:
    """Dictionary codes of one categorical axis (systems, statuses, ...), in first-seen order."""

    values: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    def code(self, value: str) -> int:
        if value not in self.index:
            self.index[value] = len(self.values)
            self.values.append(value)
        return self.index[value]


def instances_href(instance_id: str, system: str = "") -> str:
    """Link from a page in the run folder to one instance of ``instances.html``, or to one system's
    candidate of it (``#<instance id>/<system>``: the viewer opens the instance filtered to the system,
    with the compared run's candidate beside it when it changed).

    >>> instances_href("book/p01__p02"), instances_href("book/p01__p02", "copy current")
    ('instances.html#book/p01__p02', 'instances.html#book/p01__p02/copy%20current')
    """
    from urllib.parse import quote

    anchor = quote(instance_id, safe="/:")
    if system:
        anchor += "/" + quote(system, safe=":")
    return f"{INSTANCES_PAGE}#{anchor}"


def _url_path(path: Path) -> str:
    return path.as_posix()


def _json_value(text: Any) -> Any:
    """A JSON column's value decoded (the judgments table stores dicts and lists as JSON strings)."""
    if not isinstance(text, str) or not text or text[0] not in "[{":
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _plain(value: Any) -> Any:
    """A cell as JSON-able data: NaN and NA to None, numpy scalars to Python ones."""
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        try:
            value = value.item()
        except (ValueError, AttributeError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - pandas is a dependency of every caller
        pass
    return value


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


def _column(frame: pd.DataFrame, name: str) -> list[str]:
    """A column as plain strings ('' for missing); whole-column conversion, not per-cell access."""
    if name not in frame.columns:
        return [""] * len(frame)
    column = frame[name]
    return [str(v) for v in column.where(column.notna(), "").tolist()]


# -- inputs -----------------------------------------------------------------------------------------


def _media_ref(raw: str, folder: Path, dataset_root: Path | None) -> dict[str, Any]:
    """A media input: its kind, its path in the dataset (served as ``_dataset/<path>``) and its path
    relative to the run folder (used when the page is opened as a file)."""
    path = Path(raw)
    kind = _MEDIA_KINDS.get(path.suffix.lower(), "file")
    ref: dict[str, Any] = {"$media": kind, "name": path.name}
    resolved = path.resolve() if path.is_absolute() else (Path.cwd() / path).resolve()
    if dataset_root is not None:
        root = dataset_root.resolve()
        if resolved.is_relative_to(root):
            ref["path"] = _url_path(resolved.relative_to(root))
    ref["file"] = _url_path(Path(os.path.relpath(resolved, folder.resolve())))
    return ref


def _with_media(value: Any, media: frozenset[str], folder: Path, dataset_root: Path | None) -> Any:
    if isinstance(value, str) and value in media:
        return _media_ref(value, folder, dataset_root)
    if isinstance(value, Mapping):
        return {str(k): _with_media(v, media, folder, dataset_root) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_with_media(v, media, folder, dataset_root) for v in value]
    return value


# -- candidates -------------------------------------------------------------------------------------


@dataclass
class _CandidateFolder:
    """What one system's candidate folder (one condition) holds, listed once per folder.

    At the paper's scale a page looks at ~29,000 (instance, system) slots; listing each modality
    folder once turns most per-slot file checks into set look-ups.
    """

    root: Path
    imported: str | None
    slots: dict[str, set[str]]
    raw: set[str]

    @classmethod
    def read(cls, folder: Path, system: str, condition: str) -> _CandidateFolder:
        root = candidate_root(folder, system, condition)
        pointer = root / "IMPORTED.json"
        imported = (
            _clip(pointer.read_text(encoding="utf-8", errors="replace"), 600) if pointer.is_file() else None
        )
        slots = {m.value: set(os.listdir(root / m.value)) for m in Modality if (root / m.value).is_dir()}
        raw = set(os.listdir(root / "raw")) if (root / "raw").is_dir() else set()
        return cls(root, imported, slots, raw)


def _outputs(folder: Path, listing: _CandidateFolder, index: int) -> dict[str, Any]:
    """One system's outputs for one instance: players' paths, text, why a modality is missing."""
    if listing.imported is not None:
        return {"imported": listing.imported, "outputs": []}
    key = str(index)
    outputs: list[dict[str, Any]] = []
    for modality in Modality:
        present = listing.slots.get(modality.value)
        if present is None:
            continue
        entry: dict[str, Any] = {"modality": modality.value}
        slot = listing.root / modality.value / key
        produced = slot / OUTPUT_FILES[modality]
        if key in present and produced.is_file():
            entry["src"] = _url_path(produced.relative_to(folder))
            if modality is Modality.TEXT:
                entry["text"] = _clip(produced.read_text(encoding="utf-8", errors="replace"))
        else:
            reason = slot / "missing.txt"
            entry["missing"] = (
                _clip(reason.read_text(encoding="utf-8", errors="replace").strip(), 1000)
                if key in present and reason.is_file()
                else "no output written"
            )
        outputs.append(entry)
    block: dict[str, Any] = {"outputs": outputs}
    raw = listing.root / "raw" / key / "generated_raw.json"
    if key in listing.raw and raw.is_file():
        block["raw"] = _clip(raw.read_text(encoding="utf-8", errors="replace"))
        block["raw_src"] = _url_path(raw.relative_to(folder))
    return block


# -- scores and judgments ---------------------------------------------------------------------------


def _previous_values(scores: pd.DataFrame, previous: pd.DataFrame | None) -> list[Any]:
    """The compared run's value of every row of ``scores`` (None where it has no such row)."""
    if previous is None or previous.empty:
        return [None] * len(scores)
    key = [c for c in (*_SCORE_KEY, *_SCORE_KEY_TAIL) if c in scores.columns and c in previous.columns]
    prior = previous.drop_duplicates(key, keep="last").set_index(key)["value"]
    lookup = {k: _plain(v) for k, v in prior.items()}
    rows = zip(*(_column(scores, c) for c in key), strict=True)
    return [lookup.get(k if len(key) > 1 else k[0]) for k in rows]


def _judgment_record(row: Mapping[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for name in _JUDGMENT_FIELDS:
        if name not in row:
            continue
        value = _plain(row[name])
        if name in _JSON_FIELDS:
            value = _json_value(value)
        if value in ("", None, [], {}):
            continue
        record[name] = value
    status = str(row.get("status", ""))
    raw = row.get("raw_response")
    if status not in _VALID and isinstance(raw, str) and raw:
        # An invalid judgment is explained by what the judge actually answered.
        record["raw_response"] = _clip(raw, 2000)
    return record


# -- the compared run's candidates ------------------------------------------------------------------


def _attach_compared(
    source: InstancesSource,
    order: Sequence[str],
    first: Mapping[str, tuple[int, str]],
    details: dict[int, dict[str, Any]],
    systems: _Codes,
    conditions: _Codes,
) -> tuple[list[list[int]], list[str]]:
    """Put the compared run's candidate and judgments beside each changed (instance, system) pair.

    Returns the changed pairs as ``[instance position, system code, condition code]`` and the
    systems the compared run kept candidates of (a pair of any other system has nothing to compare
    with, and is neither changed nor unchanged).
    """
    compared_folder, previous = source.previous_folder, source.previous
    if compared_folder is None or previous is None or previous.empty:
        return [], []
    # The compared run's slot of an instance: its own index there (the dataset may have moved).
    compared_index = {
        iid: int(idx)
        for iid, idx in zip(_column(previous, "instance_id"), previous["index"].tolist(), strict=True)
    }
    # A system the compared run kept no candidates of (a pruned or never-copied folder) has nothing
    # to compare with: calling all its outputs "new" would bury the real changes.
    compared_systems = sorted(
        s for s in set(_column(previous, "system")) if (compared_folder / "candidates" / s).is_dir()
    )
    known = set(compared_systems)
    listings: dict[tuple[str, str], _CandidateFolder] = {}
    changed: list[list[int]] = []
    blocks: dict[tuple[str, str, str], dict[str, Any]] = {}
    for n, iid in enumerate(order):
        if iid not in compared_index:
            continue
        for system, per_condition in details[n]["systems"].items():
            if system not in known or system not in systems.index:
                continue
            for condition, block in per_condition.items():
                if not candidate_root(compared_folder, system, condition).is_dir():
                    continue
                modalities = changed_outputs(
                    source.folder,
                    compared_folder,
                    system,
                    index=first[iid][0],
                    compared_index=compared_index[iid],
                    condition=condition,
                )
                if not modalities:
                    continue
                if (system, condition) not in listings:
                    listings[system, condition] = _CandidateFolder.read(compared_folder, system, condition)
                theirs = _outputs(compared_folder, listings[system, condition], compared_index[iid])
                theirs.pop("raw", None)
                theirs.pop("raw_src", None)
                block["compared"] = {"changed": list(modalities), **theirs, "judgments": []}
                blocks[iid, system, condition] = block["compared"]
                changed.append([n, systems.index[system], conditions.code(condition)])
    judgments = source.previous_judgments
    if blocks and judgments is not None and not judgments.empty:
        keys = zip(
            _column(judgments, "instance_id"),
            _column(judgments, "system"),
            _column(judgments, "condition"),
            strict=True,
        )
        wanted = [k in blocks for k in keys]
        for record in judgments[wanted].to_dict("records"):
            key = (
                str(record.get("instance_id", "")),
                str(record.get("system", "")),
                str(_plain(record.get("condition")) or ""),
            )
            blocks[key]["judgments"].append(_judgment_record(record))
    return changed, compared_systems


# -- assembly ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InstancesPage:
    """The built page: its HTML and, when the details were too large to embed, the sidecar chunks."""

    html: str
    chunks: Mapping[int, str]
    n_instances: int
    n_systems: int


def _dumps(payload: Any) -> str:
    """Compact JSON that is safe inside a ``<script>`` element (no ``<``, ``>`` or ``&`` raw)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def build_instances_page(
    source: InstancesSource, *, embed_limit: int = EMBED_LIMIT, chunk_size: int = CHUNK_SIZE
) -> InstancesPage:
    """Build ``instances.html`` (and its sidecar chunks when the details exceed ``embed_limit``).

    Candidates are read from ``source.folder`` (the run folder layout of FORMATS.md section 4), so
    build the page after the run folder holds them.
    """
    scores = source.scores
    folder = source.folder
    systems, conditions, subsets = _Codes(), _Codes(), _Codes()
    components, statuses = _Codes(), _Codes()
    for name in sorted(set(_column(scores, "system"))):
        systems.code(name)
    for name in sorted(set(_column(scores, "condition"))):
        conditions.code(name)
    for name in sorted(set(_column(scores, "subset")) - {""}):
        subsets.code(name)

    # Instances in dataset order, with the subset each belongs to.
    first: dict[str, tuple[int, str]] = {}
    for iid, idx, subset in zip(
        _column(scores, "instance_id"), scores["index"].tolist(), _column(scores, "subset"), strict=True
    ):
        index, known = first.get(iid, (int(idx), ""))
        first[iid] = (index, known or subset)
    for item in source.inputs:
        first.setdefault(item.instance_id, (len(first), ""))
    order = sorted(first, key=lambda i: (first[i][0], i))
    position = {iid: n for n, iid in enumerate(order)}

    # Facets: per (instance, system, condition) the (component, status) pairs its rows have.
    facets: dict[tuple[int, int, int], set[int]] = {}
    details: dict[int, dict[str, Any]] = {n: {"systems": {}} for n in range(len(order))}
    prev = _previous_values(scores, source.previous)
    values = [v if math.isfinite(v) else None for v in scores["value"].astype(float).tolist()]
    facet_codes: dict[tuple[str, str], int] = {}
    rows = zip(
        *(_column(scores, c) for c in ("system", "instance_id", "condition", "track", "component")),
        *(_column(scores, c) for c in ("judge", "criterion", "status", "panel", "paired_with")),
        values,
        prev,
        strict=True,
    )
    for (
        system,
        iid,
        condition,
        track,
        component,
        judge,
        criterion,
        status,
        panel,
        paired,
        value,
        before,
    ) in rows:
        n = position[iid]
        pair = (component, status)
        if pair not in facet_codes:
            # Component codes stay below 1000 (a benchmark has a handful); status is the remainder.
            facet_codes[pair] = components.code(component) * 1000 + statuses.code(status)
        facets.setdefault((n, systems.code(system), conditions.code(condition)), set()).add(facet_codes[pair])
        block = details[n]["systems"].setdefault(system, {}).setdefault(condition, {"scores": []})
        block["scores"].append([track, component, judge, criterion, value, status, before, panel, paired])

    judgments = source.judgments
    if judgments is not None and not judgments.empty:
        for record in judgments.to_dict("records"):
            iid = str(record.get("instance_id", ""))
            if iid not in position:
                continue
            system, condition = str(record.get("system", "")), str(_plain(record.get("condition")) or "")
            block = details[position[iid]]["systems"].setdefault(system, {})
            block.setdefault(condition, {"scores": []}).setdefault("judgments", []).append(
                _judgment_record(record)
            )

    listings: dict[tuple[str, str], _CandidateFolder] = {}
    for n, iid in enumerate(order):
        index = first[iid][0]
        for system, per_condition in details[n]["systems"].items():
            if system not in systems.index:
                continue
            for condition, block in per_condition.items():
                if (system, condition) not in listings:
                    listings[system, condition] = _CandidateFolder.read(folder, system, condition)
                block.update(_outputs(folder, listings[system, condition], index))

    changed, compared_systems = _attach_compared(source, order, first, details, systems, conditions)

    for item in source.inputs:
        if item.instance_id in position:
            fields = _with_media(dict(item.fields), item.media, folder, source.dataset_root)
            details[position[item.instance_id]].setdefault("inputs", {})[item.condition] = fields

    # The detail chunks, then whether they fit in the page.
    n_chunks = max(1, math.ceil(len(order) / chunk_size))
    chunk_text = {
        k: _dumps({str(n): details[n] for n in range(k * chunk_size, min(len(order), (k + 1) * chunk_size))})
        for k in range(n_chunks)
    }
    embedded = sum(len(t) for t in chunk_text.values()) <= embed_limit
    dataset_file = ""
    if source.dataset_root is not None:
        dataset_file = _url_path(Path(os.path.relpath(source.dataset_root.resolve(), folder.resolve())))
    index_blob = {
        "title": source.title,
        "run_id": source.run_id,
        "baseline": source.baseline,
        "systems": systems.values,
        "conditions": conditions.values,
        "subsets": subsets.values,
        "components": components.values,
        "statuses": statuses.values,
        "instances": [[iid, first[iid][0], subsets.index.get(first[iid][1], -1)] for iid in order],
        "facets": [[n, s, c, sorted(codes)] for (n, s, c), codes in sorted(facets.items())],
        "chunk_size": chunk_size,
        "embedded": embedded,
        "data_dir": DATA_DIR,
        "dataset_route": DATASET_ROUTE,
        "dataset_file": dataset_file,
        # The compared run's candidates: which systems it had, which pairs changed, where its
        # candidates are (served route, or its folder relative to this one); gone: folder not found.
        "compared_systems": compared_systems,
        "changed": changed,
        "compared_route": COMPARED_ROUTE,
        "compared_file": (
            _url_path(Path(os.path.relpath(source.previous_folder.resolve(), folder.resolve())))
            if source.previous_folder is not None
            else ""
        ),
        "compared_gone": bool(source.baseline) and source.previous_folder is None,
    }
    html = render(
        "instances.html.j2",
        title=source.title,
        css=trusted(render("instances.css.j2")),
        script=trusted(render("instances.js.j2")),
        index_json=trusted(_dumps(index_blob)),
        chunks=[(k, trusted(t)) for k, t in chunk_text.items()] if embedded else [],
    )
    sidecars = {} if embedded else {k: f"window.omnievalChunk({k},{t});\n" for k, t in chunk_text.items()}
    return InstancesPage(html, sidecars, len(order), len(systems.values))


def write_instances_page(source: InstancesSource, **options: Any) -> Path:
    """Write ``instances.html`` (and ``instances_data/`` when needed) into ``source.folder``.

    The page is written atomically; a stale ``instances_data/`` from an earlier build is replaced.
    """
    page = build_instances_page(source, **options)
    target = source.folder / INSTANCES_PAGE
    data_dir = source.folder / DATA_DIR
    if data_dir.exists():
        shutil.rmtree(data_dir)
    if page.chunks:
        data_dir.mkdir(parents=True)
        for k, text in page.chunks.items():
            (data_dir / f"{k}.js").write_text(text, encoding="utf-8")
    partial = target.with_name(target.name + ".partial")
    partial.write_text(page.html, encoding="utf-8")
    partial.replace(target)
    return target
