"""Streaming, sharded judging: a panel over many systems x transitions, one shard in memory at a time.

A *shard* is one system and a contiguous chunk of the transitions (``shard_size`` of them). Each
shard goes through the same runner as :func:`~omnieval.judges.run_judges` (record building, prompt
rendering, cache keys, the response cache, model-major batches, the ledger and the repair stage)
and its rows are written as two parquet part files under ``out_dir/parts/``:

- ``<key>.scores.parquet``: the shard's scores rows (FORMATS.md section 3);
- ``<key>.judgments.parquet``: its judgment rows (:data:`~omnieval.judges.JUDGMENT_COLUMNS`);
- ``<key>.json``: the shard's manifest (counts, statuses), written last: it is the commit mark.

``<key>`` is the shard's *content key*: a hash of everything its rows depend on (panel after pins,
judge identities, benchmark, describer, the system id, each transition's content and each candidate
output's bytes). Every file is written to a temporary name, flushed to disk and renamed, so a run
killed at any point leaves each shard either committed (manifest present) or absent; a restart
skips committed shards without rendering a prompt and redoes the rest, whose answers committed to
the response cache are read back rather than requested again.

Answers are cached with *group commit* (:class:`~omnieval.judges._cache.DiskCache`): entries are
staged as temporary files and made durable and visible together (one ``syncfs`` per group, every
``commit_every`` answers and at the end of every shard, always before the shard's parts are written).

Memory is bounded by one shard: records and rows of earlier shards are dropped once written, so a
run of 345,600 calls holds no more than a run of 3,456 (``bench scale`` measures it).
``index.json`` lists the run's shards in order; :func:`read_stream` reads them back.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.candidates import Modality, output_path
from omnieval.errors import ConfigError, DataError
from omnieval.judges._cache import MediaHasher, canonical_json, fsync_dir
from omnieval.judges._calls import BackendPool, backend_group_key
from omnieval.judges._panels import load_panel, pin_revisions
from omnieval.judges._registry import judge_registry
from omnieval.judges._render import JudgeInputs
from omnieval.judges._run import (
    JUDGMENT_COLUMNS,
    DescribeAudio,
    ItemT,
    JudgedItem,
    Progress,
    ReferenceInputs,
    _Counters,
    _lineage,
    _rows,
    _Runner,
    checked_benchmark,
    resolve_reference,
)
from omnieval.judges._tracks import track

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

STREAM_FORMAT = 1
PARTS = "parts"
INDEX = "index.json"


@dataclass(frozen=True)
class Shard:
    """One system and the transitions ``transitions[start:stop]`` (positions in the given sequence)."""

    system: str
    start: int
    stop: int
    key: str


@dataclass
class StreamResult:
    """What a streaming run did (counts over all shards, committed earlier or now).

    Attributes:
        out_dir: the output folder (``index.json``, ``parts/``).
        shards: every shard of the run, in order.
        shards_run: shards judged by this call (the others were already committed).
        records: judge records over all shards (one per track x judge x system x transition).
        score_rows: scores rows over all shards.
        model_calls: requests sent to a model by this call (judging and repair, retries included).
        cache_hits: requests this call answered from the response cache.
        statuses: record status -> count, over all shards.
        max_shard_records: most records held in memory at once (the largest shard judged now).
        lineage: as :attr:`JudgeResult.lineage`, with statuses and counts over the whole run.
    """

    out_dir: Path
    shards: list[Shard]
    shards_run: int = 0
    records: int = 0
    score_rows: int = 0
    model_calls: int = 0
    cache_hits: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    max_shard_records: int = 0
    lineage: dict[str, Any] = field(default_factory=dict)

    @property
    def shards_skipped(self) -> int:
        return len(self.shards) - self.shards_run


class _KeepLoaded(BackendPool):
    """A pool that keeps every model loaded across shards; ``close_all`` at the end closes them."""

    def close(self, key: str) -> None:
        return None

    def close_all(self) -> None:
        for key in list(self.open):
            BackendPool.close(self, key)


def _atomic_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _atomic_parquet(frame: pd.DataFrame, path: Path) -> None:
    import io

    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    _atomic_bytes(path, buffer.getvalue())


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Keys:
    """Content keys of shards: shared material once, each row and candidate output per shard."""

    def __init__(
        self, base: Mapping[str, Any], needs: Sequence[Modality], reference: ReferenceInputs
    ) -> None:
        self.base = canonical_json(base)
        self.needs = tuple(needs)
        self.reference = reference
        self.hasher = MediaHasher()  # the rows' media: bounded by the dataset, not the calls
        self._transition: dict[int, str] = {}

    def _media(self, path: Path | None) -> str | None:
        return None if path is None else self.hasher(Path(path))

    def transition(self, t: JudgedItem) -> str:
        """The content key of one row: its id, index and everything the judge is shown of it.

        The row is read through the benchmark's ``reference`` function, so what keys a shard is
        what its prompts are built from. The key names are those of the first stream format (the
        reference text and image were the next page's), kept so that committed shards stay valid.
        """
        known = self._transition.get(t.index)
        if known is None:
            inputs = self.reference(t)
            known = hashlib.sha256(
                canonical_json(
                    {
                        "id": t.id,
                        "index": t.index,
                        "current_text": inputs.current_text,
                        "next_text": inputs.reference_text,
                        "metadata": dict(inputs.metadata),
                        "condition": dict(inputs.condition),
                        "target_speech": dict(inputs.reference_speech),
                        "current_image": self._media(inputs.current_image),
                        "next_image": self._media(inputs.reference_image),
                    }
                ).encode()
            ).hexdigest()
            self._transition[t.index] = known
        return known

    def candidate(self, root: Path, index: int) -> list[str]:
        """Per needed modality: the output's SHA-256, else the missing reason's, else ``absent``."""
        out: list[str] = []
        for modality in self.needs:
            path = output_path(root, modality, index)
            if path.is_file():
                out.append(_file_digest(path))
                continue
            reason = path.parent / "missing.txt"
            out.append("missing:" + _file_digest(reason) if reason.is_file() else "absent")
        return out

    def shard(self, system: str, root: Path, chunk: Sequence[Any]) -> str:
        h = hashlib.sha256(self.base.encode())
        h.update(canonical_json({"system": system}).encode())
        for t in chunk:
            h.update(self.transition(t).encode())
            h.update(",".join(self.candidate(root, t.index)).encode())
        return h.hexdigest()


def plan_shards(
    systems: Sequence[str], n_transitions: int, shard_size: int
) -> Iterator[tuple[str, int, int]]:
    """(system, start, stop) of each shard: system-major, ``shard_size`` transitions each."""
    if shard_size < 1:
        raise ConfigError(f"shard_size must be at least 1, got {shard_size}")
    for system in systems:
        for start in range(0, n_transitions, shard_size):
            yield system, start, min(start + shard_size, n_transitions)


def _committed(parts: Path, key: str, redo_errors: bool) -> dict[str, Any] | None:
    """The manifest of a committed shard with this key, or None when it must be (re)done."""
    try:
        manifest = json.loads((parts / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("key") != key:
        return None
    if not all((parts / f"{key}.{kind}.parquet").is_file() for kind in ("scores", "judgments")):
        return None
    if redo_errors and manifest.get("statuses", {}).get("inference_error", 0):
        return None
    return manifest


def stream_judges(
    transitions: Sequence[ItemT],
    candidates: Mapping[str, Path],
    *,
    panel: str,
    cache_dir: Path,
    out_dir: Path,
    shard_size: int = 300,
    describe_audio: DescribeAudio | None = None,
    progress: Progress | None = None,
    benchmark: str | None = None,
    redo_errors: bool = True,
    keep_models_loaded: bool = True,
    commit_every: int = 512,
    reference: Callable[[ItemT], JudgeInputs] | None = None,
) -> StreamResult:
    """Judge every system's candidates with one panel, shard by shard, writing parquet parts.

    Args:
        transitions, candidates, panel, cache_dir, describe_audio, progress, benchmark: as in
            :func:`~omnieval.judges.run_judges` (``progress`` counts records within each shard).
        out_dir: where ``index.json`` and ``parts/`` are written; a restart with the same inputs
            skips the shards committed there.
        shard_size: transitions per shard (a shard holds ``shard_size`` x judges records in memory).
        redo_errors: rerun committed shards that hold ``inference_error`` records (as a rerun of
            :func:`run_judges` retries them; their cached answers are not requested again).
        keep_models_loaded: keep each judge model loaded from shard to shard; False loads it per
            shard (for panels whose models cannot all be resident at once).
        commit_every: answers per group commit of the response cache (also committed per shard).
        reference: as in :func:`~omnieval.judges.run_judges` (default: the registered one).

    Returns:
        Counts over the run's shards; the rows are in the part files (:func:`read_stream`).

    Raises:
        ConfigError: bad ``shard_size`` or benchmark (as in ``run_judges``).
        DataError: a candidate output links outside its folder.
    """
    import pandas as pd

    from omnieval.scores import SCORE_COLUMNS, coerce_scores

    if shard_size < 1:
        raise ConfigError(f"shard_size must be at least 1, got {shard_size}")
    scored = checked_benchmark(benchmark)
    inputs_of = resolve_reference(reference)
    registry = judge_registry()
    config = pin_revisions(load_panel(panel), {k: v.revision for k, v in registry.items() if v.revision})
    out_dir = Path(out_dir)
    parts = out_dir / PARTS
    parts.mkdir(parents=True, exist_ok=True)
    for stale in parts.glob(".*.tmp"):  # a killed run's unfinished part: never read, removed here
        stale.unlink(missing_ok=True)

    runner = _Runner(config, Path(cache_dir), describe_audio, progress, inputs_of)
    runner.cache.group_commit = commit_every
    if keep_models_loaded:
        runner.pool = _KeepLoaded()
    identities: dict[str, Any] = {}
    for _track, judge in config.judges() + ([("repair", config.repair)] if config.repair else []):
        identity = runner.identity(judge)
        identities[judge.id] = (
            [identity.model, identity.revision, identity.weights_digest]
            if identity is not None
            else ["unavailable", runner.identity_errors.get(backend_group_key(judge), "")]
        )
    describer = (
        f"{getattr(describe_audio, '__module__', '')}.{getattr(describe_audio, '__qualname__', '')}"
        f"@{getattr(describe_audio, 'version', '')}"
        if describe_audio is not None
        else ""
    )
    needs = sorted(
        {m for name, cfg in config.tracks.items() if cfg.judges for m in track(name).needs},
        key=lambda m: m.value,
    )
    keys = _Keys(
        {
            "stream_format": STREAM_FORMAT,
            "panel": config.model_dump(mode="json"),
            "benchmark": scored,
            "identities": identities,
            "describer": describer,
        },
        needs,
        inputs_of,
    )

    result = StreamResult(out_dir=out_dir, shards=[])
    totals = _Counters()
    started = time.perf_counter()
    try:
        for system, start, stop in plan_shards(list(candidates), len(transitions), shard_size):
            root = Path(candidates[system])
            chunk = transitions[start:stop]
            shard = Shard(system, start, stop, keys.shard(system, root, chunk))
            result.shards.append(shard)
            manifest = _committed(parts, shard.key, redo_errors)
            if manifest is None:
                manifest = _run_shard(
                    runner,
                    shard,
                    chunk,
                    root,
                    parts,
                    panel=config.name,
                    benchmark=scored,
                    frames=(pd, SCORE_COLUMNS, coerce_scores),
                )
                result.shards_run += 1
                result.max_shard_records = max(result.max_shard_records, manifest["records"])
                totals.calls += manifest["model_calls"]
                totals.hits += manifest["cache_hits"]
                totals.descriptions += manifest["audio_descriptions"]
            result.records += manifest["records"]
            result.score_rows += manifest["score_rows"]
            for status, n in manifest["statuses"].items():
                result.statuses[status] = result.statuses.get(status, 0) + n
    finally:
        runner.cache.commit()
        runner.pool.close_all()
    result.model_calls, result.cache_hits = totals.calls, totals.hits
    runner.counters = totals
    lineage = _lineage(runner, [])
    lineage["statuses"] = _merge_statuses(parts, result.shards)
    result.lineage = lineage
    index = {
        "stream_format": STREAM_FORMAT,
        "panel": config.name,
        "benchmark": scored,
        "shards": [
            {"key": s.key, "system": s.system, "start": s.start, "stop": s.stop} for s in result.shards
        ],
        "lineage": lineage,
    }
    _atomic_bytes(out_dir / INDEX, json.dumps(index, indent=1, default=str).encode())
    fsync_dir(out_dir)
    log.info(
        "judge panel %s (streamed): %d shards (%d run), %d records, %d model calls, %d cache hits, %.1f s",
        config.name,
        len(result.shards),
        result.shards_run,
        result.records,
        result.model_calls,
        result.cache_hits,
        time.perf_counter() - started,
    )
    return result


def _run_shard(
    runner: _Runner,
    shard: Shard,
    chunk: Sequence[JudgedItem],
    root: Path,
    parts: Path,
    *,
    panel: str,
    benchmark: str,
    frames: tuple[Any, Sequence[str], Any],
) -> dict[str, Any]:
    """Judge one shard, write its parts and manifest; return the manifest (scores values canonical)."""
    from omnieval.scores import canonical_scores

    pd, score_columns, coerce_scores = frames
    runner.counters = _Counters()
    # Candidate media are hashed once per shard; a run-long memo would grow with the systems.
    runner.hasher = MediaHasher()
    candidates = {shard.system: root}
    records = runner.build_records(chunk, candidates)
    try:
        runner.prepare(records, candidates)
    except DataError as exc:
        raise DataError(f"system {shard.system}: {exc}") from None
    runner.judge(records)
    runner.repair(records)
    # Answers become durable before the rows that depend on them are committed.
    runner.cache.commit()
    score_rows, judgment_rows = _rows(records, panel=panel, benchmark=benchmark)
    statuses: dict[str, dict[str, int]] = {}
    flat: dict[str, int] = {}
    for record in records:
        per = statuses.setdefault(f"{record.track}/{record.judge_id}", {})
        per[str(record.status)] = per.get(str(record.status), 0) + 1
        flat[str(record.status)] = flat.get(str(record.status), 0) + 1
    manifest = {
        "key": shard.key,
        "system": shard.system,
        "start": shard.start,
        "stop": shard.stop,
        "records": len(records),
        "score_rows": len(score_rows),
        "model_calls": runner.counters.calls,
        "cache_hits": runner.counters.hits,
        "audio_descriptions": runner.counters.descriptions,
        "statuses": flat,
        "track_statuses": statuses,
    }
    del records
    scores = canonical_scores(coerce_scores(pd.DataFrame(score_rows, columns=list(score_columns))))
    del score_rows
    _atomic_parquet(scores, parts / f"{shard.key}.scores.parquet")
    del scores
    judgments = pd.DataFrame(judgment_rows, columns=list(JUDGMENT_COLUMNS))
    del judgment_rows
    _atomic_parquet(judgments, parts / f"{shard.key}.judgments.parquet")
    del judgments
    fsync_dir(parts)  # the parts' names are durable before the manifest that vouches for them
    _atomic_bytes(parts / f"{shard.key}.json", json.dumps(manifest).encode())
    fsync_dir(parts)
    return manifest


def _merge_statuses(parts: Path, shards: Sequence[Shard]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for shard in shards:
        manifest = json.loads((parts / f"{shard.key}.json").read_text(encoding="utf-8"))
        for label, per in manifest.get("track_statuses", {}).items():
            into = out.setdefault(label, {})
            for status, n in per.items():
                into[status] = into.get(status, 0) + n
    return out


def read_stream(out_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scores and judgments of a finished streaming run, concatenated in shard order.

    Raises:
        DataError: ``index.json`` or a part file it lists is missing or unreadable.
    """
    import pandas as pd

    from omnieval.scores import SCORE_COLUMNS, coerce_scores

    out_dir = Path(out_dir)
    try:
        index = json.loads((out_dir / INDEX).read_text(encoding="utf-8"))
        keys = [s["key"] for s in index["shards"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{out_dir / INDEX}: not a finished streaming run ({exc})") from None
    frames: dict[str, list[pd.DataFrame]] = {"scores": [], "judgments": []}
    for key in keys:
        for kind, into in frames.items():
            path = out_dir / PARTS / f"{key}.{kind}.parquet"
            try:
                into.append(pd.read_parquet(path))
            except (OSError, ValueError) as exc:
                raise DataError(f"{path}: cannot read part ({exc})") from None
    scores = (
        coerce_scores(pd.concat(frames["scores"], ignore_index=True))
        if frames["scores"]
        else coerce_scores(pd.DataFrame(columns=list(SCORE_COLUMNS)))
    )
    judgments = (
        pd.concat(frames["judgments"], ignore_index=True)
        if frames["judgments"]
        else pd.DataFrame(columns=list(JUDGMENT_COLUMNS))
    )
    return scores, judgments


__all__ = ["Shard", "StreamResult", "plan_shards", "read_stream", "stream_judges"]
