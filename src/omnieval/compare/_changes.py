"""What changed between two runs, read from their ``lineage.json`` (and candidate folders).

:func:`lineage_changes` returns the comparison document's ``changed`` mapping. Each key keeps one
type, empty when nothing of that kind changed:

- ``dataset`` (dict): ``version`` / ``dvc_md5`` as ``{"a", "b"}`` when they differ, and lists
  ``instances_added``, ``instances_removed``, ``instances_changed`` (ids whose fingerprinted texts
  differ; needs both runs' dataset manifests), ``files_changed`` (dataset files added, removed or
  with other bytes);
- ``code`` (dict): ``git_sha``, ``git_dirty``, ``package_digest`` as ``{"a", "b"}``;
- ``judges`` (list): ``{"panel", "judge", "field", "a", "b"}`` per judge added/removed
  (``field`` = ``judge``) or per changed identity or setting (``revision``, ``weights_sha256.<file>``,
  ``roles.<track>.decoding.<param>``, ...), and per track that became (un)available;
- ``prompts`` (list): ``{"panel", "prompt", "a", "b"}`` per rubric prompt (by track) or repair
  prompt whose hash, variant or version changed (values ``sha256[:12]`` plus variant/version);
- ``metric_models`` (list): ``{"key", "a", "b", "systems"}`` per changed setting of the automatic
  metrics (model hashes, versions, config), keyed without the system; local file paths and worker
  counts are ignored;
- ``candidates`` (list): ``{"system", "a", "b"}`` with each run's SHA-256 over the system's
  ``candidates/<system>`` tree (None where the run has no such folder).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# Settings that change where or how fast something runs, not what it computes.
_OPERATIONAL_KEYS = frozenset(
    {
        "path",
        "workers",
        "batch_size",
        "asr_threads",
        "n_threads",
        "threads",
        "problems",
        "problems_total",
        "speech_status_counts",
        "digest",
        "cache_hits",
        "computed",
        "model_calls",
        "deviations",
        "description",
        "benchmark",
    }
)
# Per-run bookkeeping of a judge panel, not its identity.
_PANEL_BOOKKEEPING = frozenset(
    {"statuses", "cache_hits", "model_calls", "audio_descriptions_computed", "panel_sha256"}
)


def _flatten(prefix: str, value: Any, out: dict[str, Any], ignore: frozenset[str]) -> None:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if str(key) in ignore:
                continue
            _flatten(f"{prefix}.{key}" if prefix else str(key), sub, out, ignore)
    else:
        out[prefix] = value


def _setting_changes(a: Any, b: Any) -> list[tuple[str, Any, Any]]:
    """``(dotted key, value in a, value in b)`` for each setting that differs, keys sorted.

    Both sides are flattened to dotted keys first, leaving out :data:`_OPERATIONAL_KEYS` (they
    change where or how fast something runs, not what), so a judge's or a metric model's nested
    settings are compared leaf by leaf; a key on one side only pairs its value with None.
    """
    fa: dict[str, Any] = {}
    fb: dict[str, Any] = {}
    _flatten("", a, fa, _OPERATIONAL_KEYS)
    _flatten("", b, fb, _OPERATIONAL_KEYS)
    return [
        (key, fa.get(key), fb.get(key)) for key in sorted(set(fa) | set(fb)) if fa.get(key) != fb.get(key)
    ]


def _pair(a: Any, b: Any) -> dict[str, Any]:
    return {"a": a, "b": b}


def _dataset(
    lin_a: Mapping[str, Any],
    lin_b: Mapping[str, Any],
    ids_a: Iterable[str],
    ids_b: Iterable[str],
    manifest_a: Mapping[str, Any] | None,
    manifest_b: Mapping[str, Any] | None,
) -> dict[str, Any]:
    da, db = lin_a.get("dataset") or {}, lin_b.get("dataset") or {}
    out: dict[str, Any] = {}
    for key in ("version", "dvc_md5"):
        if da.get(key) != db.get(key):
            out[key] = _pair(da.get(key), db.get(key))
    set_a, set_b = set(ids_a), set(ids_b)
    if set_b - set_a:
        out["instances_added"] = sorted(set_b - set_a)
    if set_a - set_b:
        out["instances_removed"] = sorted(set_a - set_b)
    if manifest_a is not None and manifest_b is not None:

        def texts(m: Mapping[str, Any]) -> dict[str, list[tuple[str, str]]]:
            by_id: dict[str, list[tuple[str, str]]] = {}
            for entry in m.get("texts") or []:
                by_id.setdefault(str(entry.get("id")), []).append(
                    (str(entry.get("field")), str(entry.get("sha256")))
                )
            return {k: sorted(v) for k, v in by_id.items()}

        ta, tb = texts(manifest_a), texts(manifest_b)
        changed = sorted(i for i in set(ta) & set(tb) if ta[i] != tb[i])
        if changed:
            out["instances_changed"] = changed

        def files(m: Mapping[str, Any]) -> dict[str, str]:
            entries = [
                *(m.get("files") or []),
                *([m["parquet"]] if isinstance(m.get("parquet"), Mapping) else []),
            ]
            return {str(e.get("path")): str(e.get("sha256")) for e in entries}

        fa, fb = files(manifest_a), files(manifest_b)
        moved = sorted(p for p in set(fa) | set(fb) if fa.get(p) != fb.get(p))
        if moved:
            out["files_changed"] = moved
    return out


def _code(lin_a: Mapping[str, Any], lin_b: Mapping[str, Any]) -> dict[str, Any]:
    ca, cb = lin_a.get("code") or {}, lin_b.get("code") or {}
    return {
        k: _pair(ca.get(k), cb.get(k))
        for k in ("git_sha", "git_dirty", "package_digest")
        if ca.get(k) != cb.get(k)
    }


def _judges(panels_a: Mapping[str, Any], panels_b: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for panel in sorted(set(panels_a) | set(panels_b)):
        pa, pb = panels_a.get(panel), panels_b.get(panel)
        if pa is None or pb is None:
            out.append(
                {"panel": panel, "judge": None, "field": "panel", "a": pa is not None, "b": pb is not None}
            )
            continue
        ja, jb = pa.get("judges") or {}, pb.get("judges") or {}
        for judge in sorted(set(ja) | set(jb)):
            if judge not in ja or judge not in jb:
                out.append(
                    {"panel": panel, "judge": judge, "field": "judge", "a": judge in ja, "b": judge in jb}
                )
                continue
            for key, a, b in _setting_changes(ja[judge], jb[judge]):
                out.append({"panel": panel, "judge": judge, "field": key, "a": a, "b": b})
        ua, ub = pa.get("unavailable") or {}, pb.get("unavailable") or {}
        for track in sorted(set(ua) | set(ub)):
            if (track in ua) != (track in ub):
                out.append(
                    {
                        "panel": panel,
                        "judge": None,
                        "field": f"unavailable.{track}",
                        "a": ua.get(track),
                        "b": ub.get(track),
                    }
                )
    return out


def _prompt_id(entry: Any) -> str | None:
    if not isinstance(entry, Mapping):
        return None
    sha = str(entry.get("sha256", ""))[:12]
    extras = [str(entry[k]) for k in ("variant", "version") if entry.get(k)]
    return " ".join([sha, *extras]) if extras else sha


def _prompts(panels_a: Mapping[str, Any], panels_b: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for panel in sorted(set(panels_a) & set(panels_b)):
        pa, pb = panels_a[panel].get("prompts") or {}, panels_b[panel].get("prompts") or {}
        for track in sorted(set(pa) | set(pb)):
            a, b = _prompt_id(pa.get(track)), _prompt_id(pb.get(track))
            if a != b:
                out.append({"panel": panel, "prompt": track, "a": a, "b": b})
        ra, rb = (
            _prompt_id(panels_a[panel].get("repair_prompt")),
            _prompt_id(panels_b[panel].get("repair_prompt")),
        )
        if ra != rb:
            out.append({"panel": panel, "prompt": "repair", "a": ra, "b": rb})
    return out


def _metric_models(metrics_a: Mapping[str, Any], metrics_b: Mapping[str, Any]) -> list[dict[str, Any]]:
    # One entry per (setting, old value, new value), listing the systems it changed for: every
    # system usually shares the metric models, so the change is reported once.
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for system in sorted(set(metrics_a) & set(metrics_b)):
        for key, a, b in _setting_changes(metrics_a[system], metrics_b[system]):
            entry = found.setdefault((key, repr(a), repr(b)), {"key": key, "a": a, "b": b, "systems": []})
            entry["systems"].append(system)
    return [found[slot] for slot in sorted(found)]


def tree_digest(folder: Path) -> str | None:
    """SHA-256 over the relative paths and contents of every file below ``folder`` (None if absent)."""
    if not folder.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode())
        file_hash = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                file_hash.update(block)
        digest.update(file_hash.digest())
    return digest.hexdigest()


def _candidates(folder_a: Path, folder_b: Path, systems: Iterable[str]) -> list[dict[str, Any]]:
    out = []
    for system in sorted(set(systems)):
        a = tree_digest(folder_a / "candidates" / system)
        b = tree_digest(folder_b / "candidates" / system)
        if a != b:
            out.append({"system": system, "a": a, "b": b})
    return out


def lineage_changes(
    lin_a: Mapping[str, Any],
    lin_b: Mapping[str, Any],
    *,
    folder_a: Path,
    folder_b: Path,
    ids_a: Iterable[str],
    ids_b: Iterable[str],
    systems: Iterable[str],
    manifest_a: Mapping[str, Any] | None = None,
    manifest_b: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``changed`` mapping of a comparison (shapes in the module docstring).

    Args:
        lin_a: Run A's ``lineage.json``.
        lin_b: Run B's ``lineage.json``.
        folder_a: Run A's folder (its ``candidates/`` are hashed).
        folder_b: Run B's folder.
        ids_a: Instance ids in run A's scores table.
        ids_b: Instance ids in run B's scores table.
        systems: Systems whose candidates are compared (those of either run).
        manifest_a: Run A's dataset manifest, when the folder has one.
        manifest_b: Run B's dataset manifest.
    """
    panels_a, panels_b = lin_a.get("judges") or {}, lin_b.get("judges") or {}
    return {
        "dataset": _dataset(lin_a, lin_b, ids_a, ids_b, manifest_a, manifest_b),
        "code": _code(lin_a, lin_b),
        "judges": _judges(panels_a, panels_b),
        "prompts": _prompts(panels_a, panels_b),
        "metric_models": _metric_models(lin_a.get("metrics") or {}, lin_b.get("metrics") or {}),
        "candidates": _candidates(folder_a, folder_b, systems),
    }


def describe_judge_changes(entries: list[Mapping[str, Any]]) -> list[str]:
    """One line per changed judge (or panel) of ``changed.judges``, naming what changed."""
    grouped: dict[tuple[str, str | None], list[Mapping[str, Any]]] = {}
    for entry in entries:
        grouped.setdefault((str(entry["panel"]), entry.get("judge")), []).append(entry)
    lines = []
    for (panel, judge), items in grouped.items():
        who = f"panel {panel}" + (f", judge {judge}" if judge else "")
        if len(items) == 1 and items[0]["field"] in ("judge", "panel"):
            item = items[0]
            lines.append(f"judge {'added' if item['b'] else 'removed'} ({who})")
            continue
        fields = [str(i["field"]) for i in items]
        shown = ", ".join(fields[:4]) + (f" (+{len(fields) - 4} more)" if len(fields) > 4 else "")
        lines.append(f"judge changed ({who}): {shown}")
    return lines


def describe_prompt_change(entry: Mapping[str, Any]) -> str:
    """One line for a ``changed.prompts`` entry, naming the prompt."""
    return f"judge prompt changed: panel {entry['panel']}, prompt {entry['prompt']} ({entry['a']} -> {entry['b']})"


def describe_metric_changes(entries: list[Mapping[str, Any]]) -> list[str]:
    """At most one line for ``changed.metric_models`` (the first three settings, then a count)."""
    if not entries:
        return []
    keys = list(dict.fromkeys(str(e["key"]) for e in entries))
    shown = "; ".join(f"{e['key']} {e['a']!r} -> {e['b']!r}" for e in entries[:3]) + (
        f" (+{len(keys) - 3} more settings)" if len(keys) > 3 else ""
    )
    return [f"metric models or settings changed: {shown}"]
