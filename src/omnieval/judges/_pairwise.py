"""Blind pairwise judging: a candidate and a reference judged in one answer, in a seeded order.

What a pairwise benchmark (PRISM-Bench) shares with the single-candidate one goes through the same
runner (:class:`~._calls.CallRunner`: cache, model groups, batches, retries, repair); this module
holds what only pairs need:

- :class:`PairPanelConfig`: a panel of judges that all see every pair (no per-track judges), with
  the input kind its prompts are written for, and :func:`load_panel_file` / :func:`describe_pair_panel`
  to load and list a benchmark's shipped ones;
- :class:`PairCall` and :class:`PairRunner`: one call per (judge, system, item, group[, swapped]),
  built by :func:`pair_calls` in each pair's blind order, sent, read and repaired through the
  shared runner, with the run's ledger, usage and unavailability;
- :class:`PairedReading` and :func:`swap_summary`: when each pair is also judged in the other
  order, how often the preferred output changes (position bias).

The answer itself (both outputs' scores under ``candidate_<n>`` keys) is read with
:func:`~._parse.read_per_candidate`; which pairs, cells and rows there are stays the benchmark's.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnieval.backends.llm import ChatBackend, ChatRequest, Message, ModelIdentity
from omnieval.errors import ConfigError, validation_problems
from omnieval.judges._cache import DiskCache, canonical_json
from omnieval.judges._calls import (
    BackendPool,
    CallJob,
    CallRunner,
    CallState,
    R,
    RepairJob,
    RepairLog,
    backend_group_key,
    judge_tags,
    judges_lineage,
    mlflow_tag_part,
    status_ledger,
)
from omnieval.judges._panels import JudgeConfig
from omnieval.judges._repair import RepairOutcome
from omnieval.scores import Status

if TYPE_CHECKING:
    import pandas as pd


class PairPanelConfig(BaseModel):
    """A panel of judges for pairs: every judge judges every pair; a benchmark extends it with its
    own input settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    """The panel's name, written in the rows' ``panel`` column."""
    description: str = ""
    judge_kind: Literal["native", "cascade"]
    """``native``: the judge watches and hears the outputs; ``cascade``: a text model reads measured facts."""
    requires: str = Field(min_length=1)
    """What the panel needs to run, stated when it cannot (e.g. an omni model behind an API)."""
    judges: tuple[JudgeConfig, ...] = Field(min_length=1)
    """Every judge judges every pair."""
    repair: JudgeConfig | None = None
    """The model that may reformat an unreadable answer (never change its scores)."""

    def sha256(self) -> str:
        return hashlib.sha256(canonical_json(self.model_dump(mode="json")).encode()).hexdigest()


P = TypeVar("P", bound=BaseModel)


def load_panel_file(
    model: type[P], name: str | Path, shipped: Mapping[str, str], package: str, what: str
) -> P:
    """A shipped panel by name (``shipped``: name -> file in ``package``'s ``panels`` folder), or a
    panel YAML file by path, validated as ``model``; ConfigError (naming ``what``) when invalid."""
    import yaml

    if isinstance(name, str) and name in shipped:
        source = f"{package.replace('.', '/')}/panels/{shipped[name]}"
        text = resources.files(package).joinpath("panels", shipped[name]).read_text(encoding="utf-8")
    else:
        path = Path(name)
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            raise ConfigError(
                f"unknown {what} {str(name)!r}; known: {', '.join(sorted(shipped))} "
                "(or a path to a panel YAML file)"
            )
        source, text = str(path), path.read_text(encoding="utf-8")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(validation_problems(f"{source}: invalid {what}", exc)) from None


def describe_pair_panel(name: str, panel: PairPanelConfig, tracks: Sequence[str]) -> dict[str, Any]:
    """A pair panel as ``omnieval judge panels`` lists it: every track lists the same judges."""
    judges = [
        {
            "id": j.id,
            "model": j.model,
            "backend": j.backend.kind,
            **({"unavailable": j.unavailable} if j.unavailable else {}),
        }
        for j in panel.judges
    ]
    entry = {"input": panel.judge_kind, "unavailable": None, "judges": judges}
    return {
        "name": name,
        "description": " ".join(panel.description.split()),
        "judge_kind": panel.judge_kind,
        "requires": panel.requires,
        "tracks": dict.fromkeys(tracks, entry),
        "repair": panel.repair.id if panel.repair else None,
    }


class PairOrder(Protocol):
    """A pair's blind order: which role (``candidate`` or ``reference``) is shown as 1 and 2."""

    @property
    def first(self) -> str: ...
    def role(self, slot: int) -> str: ...
    def slot(self, role: Any) -> int: ...
    def swapped(self) -> PairOrder: ...
    def sidecar(self) -> dict[str, Any]: ...


class PairedItem(Protocol):
    """What pair judging needs of a dataset row itself: its id and its candidate index."""

    @property
    def id(self) -> str: ...
    @property
    def index(self) -> int: ...


ItemT = TypeVar("ItemT", bound=PairedItem)
CellT = TypeVar("CellT")


@dataclass
class PairCall(CallState[R]):
    """One (judge, system, item, group[, swapped]) call: both outputs of a pair scored on ``cells``."""

    system: str
    item: Any
    group: int
    order: PairOrder
    swapped: bool
    cells: tuple[Any, ...]

    @property
    def sort_key(self) -> tuple[int, int, str, bool]:
        # Consecutive calls of one group and item share their prompt prefix (llama.cpp reuses it).
        return (self.group, self.item.index, self.system, self.swapped)

    @property
    def valued(self) -> bool:
        """Whether the call holds scores (``ok`` or ``repaired``)."""
        return self.status in (Status.OK, Status.REPAIRED) and self.reading is not None

    def paired(self, path: Callable[[int, Any], str], label: str) -> PairedReading:
        """This valued call as the swap check compares it (``path(slot, cell)`` names a score)."""
        assert self.reading is not None
        scores = self.reading.scores
        cells = {str(c): (scores[path(1, c)], scores[path(2, c)]) for c in self.cells}
        pair = (self.judge_id, self.system, self.item.id)
        return PairedReading(pair, label, self.swapped, cells, self.order.slot("candidate"))

    def judgment_columns(self) -> dict[str, Any]:
        """The blind order the judge saw and the cells it was asked, as judgments columns."""
        return {
            "order_first": self.order.first,
            "order": json.dumps(self.order.sidecar(), ensure_ascii=False),
            "cells": json.dumps([str(c) for c in self.cells]),
        }


def pair_calls(
    judges: Sequence[JudgeConfig],
    systems: Iterable[str],
    items: Sequence[ItemT],
    groups: Callable[[ItemT], Iterable[tuple[int, Sequence[Any]]]],
    order: Callable[[str, ItemT], PairOrder],
    swap_check: bool,
) -> list[PairCall[Any]]:
    """Every call of a run: per judge, system and item, each group with cells (``groups(item)``)
    in the pair's blind order (``order(system, item)``), and in the other order too with
    ``swap_check``."""
    calls: list[PairCall[Any]] = []
    for judge in judges:
        for system in systems:
            for item in items:
                primary = order(system, item)
                orders = [(primary, False)] + ([(primary.swapped(), True)] if swap_check else [])
                for group, cells in groups(item):
                    for shown, swapped in orders if cells else ():
                        calls.append(PairCall(system, item, group, shown, swapped, tuple(cells), judge=judge))
    return calls


@dataclass(frozen=True)
class RepairPrompt(Generic[R]):
    """How a pair benchmark asks its repair model, and judges the repair (:func:`~._repair.decide_repair`).

    Attributes:
        render: (unreadable answer, its error, cells) -> the repair messages.
        schema: cells -> the JSON schema the repair must follow (a verdict, or ``{"unrecoverable": true}``).
        sha256: the repair prompt's hash (part of each repair request's cache key).
        decide: (original, repair answer, cells) -> repaired (with its reading) or unrecoverable.
    """

    render: Callable[[str, str, tuple[Any, ...]], Sequence[Message]]
    schema: Callable[[tuple[Any, ...]], dict[str, Any]]
    sha256: str
    decide: Callable[[str, str, tuple[Any, ...]], RepairOutcome[R]]


def _bound(read: Callable[[str, tuple[Any, ...]], R], cells: tuple[Any, ...]) -> Callable[[str], R]:
    return lambda answer: read(answer, cells)


class PairRunner(CallRunner):
    """Pair calls on the shared runner: every model stays loaded until the run ends (a judge and
    the repair model may share one); progress counts settled calls (``counters.total`` is every
    call, known up front); a judge that cannot run makes its calls ``not_applicable`` with the
    panel's ``requires`` in their note. A benchmark subclasses it with what its judges are shown."""

    close_groups = False

    def __init__(
        self,
        panel: PairPanelConfig,
        cache_dir: Path,
        *,
        benchmark: str,
        progress: Callable[[str, int, int], None] | None,
        factory: Callable[[JudgeConfig], ChatBackend] | None,
    ) -> None:
        super().__init__(cache_dir, BackendPool(factory, what=f"{benchmark} judge"))
        self.cache_dir, self.panel, self.benchmark, self.progress = cache_dir, panel, benchmark, progress
        self.made: Counter[str] = Counter()
        """Judge inputs this run made, by kind (facts measured, clips composed); cached ones not counted."""
        self._derived: dict[tuple[str, str], dict[str, Any]] = {}

    def derived(self, namespace: str, key: str, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """A judge input derived from outputs (e.g. facts measured from a clip) under its content
        ``key``: from this run's memo, else the cache folder's ``namespace``, else ``make()`` (kept
        there and counted in :attr:`made`)."""
        if (namespace, key) not in self._derived:
            cache = DiskCache(self.cache_dir, namespace)
            value = cache.get_json(key)
            if value is None:
                value = make()
                cache.put_json(key, value)
                self.made[namespace] += 1
            self._derived[namespace, key] = value
        return self._derived[namespace, key]

    def _settled(self, call: CallState[Any]) -> None:
        self.counters.done += 1
        if self.progress is not None:
            self.progress(f"{self.benchmark} judge {call.judge_id}", self.counters.done, self.counters.total)

    def unavailable_note(self, reason: str) -> str:
        return f"unavailable: {self.panel.requires} ({reason})"

    def unavailable(self) -> list[str]:
        """Why the panel's judges could not run (``<panel>/<judge>: unavailable: ...``)."""
        failed = self.pool.failed
        return sorted(
            {
                f"{self.panel.name}/{j.id}: {self.unavailable_note(failed[backend_group_key(j)])}"
                for j in self.panel.judges
                if backend_group_key(j) in failed
            }
        )

    def judge(self, calls: Sequence[PairCall[R]], read: Callable[[str, tuple[Any, ...]], R]) -> None:
        """Send every prepared call (in prefix-sharing order); ``read(answer, cells)`` reads its answer."""
        todo = sorted((c for c in calls if not c.status and c.request is not None), key=lambda c: c.sort_key)
        jobs = [
            CallJob(
                self,
                c,
                _bound(read, c.cells),
                order=c.sort_key,
                meta={"judge": c.judge_id, "benchmark": self.benchmark},
                system=c.system,
                unavailable=self.unavailable_note,
            )
            for c in todo
        ]
        self.run_jobs(jobs)

    def repair(self, calls: Sequence[PairCall[R]], prompt: RepairPrompt[R]) -> None:
        """Send unreadable answers to the panel's repair model, asked with ``prompt``."""

        def job(call: PairCall[R], position: int, identity: ModelIdentity) -> RepairJob[R]:
            repair = self.panel.repair
            assert repair is not None and call.completion is not None and call.reading is not None
            request = ChatRequest(
                messages=tuple(prompt.render(call.completion.text, call.reading.error, call.cells)),
                decoding=repair.decoding,
                json_schema=prompt.schema(call.cells),
                chat_template_kwargs=dict(repair.framing.chat_template_kwargs),
            )
            return RepairJob(
                self,
                call,
                repair,
                request,
                self.request_key(identity, repair, prompt.sha256, request, benchmark=self.benchmark),
                decide=lambda original, answer: prompt.decide(original, answer, call.cells),
                log=RepairLog(
                    detailed=False, unavailable=lambda r: ("inference_error", self.unavailable_note(r))
                ),
                order=(position,),
                meta={"judge": repair.id, "benchmark": self.benchmark},
                system=call.system,
            )

        self.repair_round(calls, self.panel.repair, self.availability, job)

    def run(
        self,
        calls: Sequence[PairCall[R]],
        prepare: Callable[[PairCall[R], JudgeConfig], None],
        read: Callable[[str, tuple[Any, ...]], R],
        repair: RepairPrompt[R],
    ) -> None:
        """Judge ``calls``: ``prepare(call, judge)`` settles each call that needs no model or builds
        its request (:meth:`ask`); then the judging and repair rounds; every model is closed after."""
        self.counters.total = len(calls)
        try:
            for call in calls:
                assert call.judge is not None
                prepare(call, call.judge)
            self.judge(calls, read)
            self.repair(calls, repair)
        finally:
            self.pool.close_all()

    def lineage_head(self) -> dict[str, Any]:
        """The lineage's panel part: benchmark, panel (name, hash, description, judge kind), judges."""
        panel = self.panel
        roles = [("judge", j) for j in panel.judges] + ([("repair", panel.repair)] if panel.repair else [])
        return {
            "benchmark": self.benchmark,
            "panel": panel.name,
            "panel_sha256": panel.sha256(),
            "description": panel.description,
            "judge_kind": panel.judge_kind,
            "judges": judges_lineage(self, roles),
        }

    def figures(self, calls: Sequence[PairCall[Any]], statuses: Sequence[str]) -> dict[str, Any]:
        """The run's lineage figures: status ledger per judge, model calls, cache hits, mean
        seconds per answered call, usage (per judge, and per system)."""
        lat = self.counters.latencies
        return {
            "ledger": status_ledger(calls, statuses),
            "model_calls": self.counters.calls,
            "cache_hits": self.counters.hits,
            "seconds_per_call": (sum(lat) / len(lat)) if lat else None,
            "usage": self.usage_json(),
            "usage_by_system": self.usage_by_system_json(),
        }


@dataclass(frozen=True)
class PairedReading:
    """One valid pair judgment, as the swap check compares it with the same pair's other order.

    Attributes:
        pair: what both orders share (judge, system, item).
        label: the group it is counted in (a stage).
        swapped: whether this is the swap-check order.
        scores: per scored cell, (score of the output shown first, of the one shown second).
        candidate_slot: where the candidate was shown (1 or 2).
    """

    pair: tuple[Hashable, ...]
    label: str
    swapped: bool
    scores: Mapping[str, tuple[int, int]]
    candidate_slot: int

    def preference(self, cell: str) -> str:
        first, second = self.scores[cell]
        cand, ref = (first, second) if self.candidate_slot == 1 else (second, first)
        return "candidate" if cand > ref else ("reference" if ref > cand else "tie")


def swap_summary(readings: Iterable[PairedReading], labels: Sequence[str]) -> dict[str, Any]:
    """Per label: cells judged validly in both orders, how often the preferred output changed.

    ``flip_rate`` counts any change of preference (candidate, reference or tie) between the two
    orders; ``strict_flip_rate`` only candidate <-> reference; ``first_slot_wins`` is the share of
    cells, over both orders, where the output shown first scored higher (0.5 x non-ties when unbiased).
    """
    pairs: dict[tuple[Hashable, ...], dict[bool, PairedReading]] = {}
    for reading in readings:
        pairs.setdefault((*reading.pair, reading.label), {})[reading.swapped] = reading
    out: dict[str, Any] = {}
    for label in labels:
        cells = flips = strict = first_wins = comparisons = 0
        for both in pairs.values():
            if len(both) != 2 or both[False].label != label:
                continue
            for cell in both[False].scores:
                a, b = both[False].preference(cell), both[True].preference(cell)
                cells += 1
                flips += a != b
                strict += {a, b} == {"candidate", "reference"}
                for reading in both.values():
                    first, second = reading.scores[cell]
                    comparisons += 1
                    first_wins += first > second
        out[label] = {
            "cells": cells,
            "flips": flips,
            "flip_rate": flips / cells if cells else None,
            "strict_flips": strict,
            "strict_flip_rate": strict / cells if cells else None,
            "first_slot_wins": first_wins / comparisons if comparisons else None,
        }
    return out


@dataclass
class PairJudgeResult:
    """What one pair panel run produced.

    Attributes:
        scores: scores-table rows (FORMATS.md section 3): per call and cell, one system row and one
            row of the reference system; rows of swap-check calls are not included.
        judgments: one row per call, swap-check calls included.
        lineage: panel, judge kind, judges, prompt hashes, the benchmark's versions, ledger, timing.
        mlflow_tags: ``omnieval.judge.<id>.revision``/``.sha256``, ``omnieval.prompt.<panel>.<group>.sha256``.
        model_calls: requests sent to a model (judging and repair); cache_hits: answered from the cache.
        swap: per group flip rates (:func:`swap_summary`) when the swap check ran, else None.
        unavailable: why the panel (or one of its judges) could not run; empty when it ran.
    """

    scores: pd.DataFrame
    judgments: pd.DataFrame
    lineage: dict[str, Any]
    mlflow_tags: dict[str, str]
    model_calls: int
    cache_hits: int
    swap: dict[str, Any] | None
    unavailable: list[str]


def pair_score_rows(
    calls: Iterable[PairCall[Any]],
    reference_system: str,
    path: Callable[[int, Any], str],
    columns: Callable[[PairCall[Any], Any], dict[str, Any]],
) -> list[dict[str, Any]]:
    """Scores rows of the first-order calls: per cell (``columns(call, cell)``), the candidate's row
    (``system``, paired with ``reference_system``) then the reference's (``reference_system``,
    paired with the system), each with the score of the slot it was shown in (``path(slot, cell)``)."""
    rows: list[dict[str, Any]] = []
    for call in (c for c in calls if not c.swapped):
        for cell in call.cells:
            for role, system, paired in (
                ("candidate", call.system, reference_system),
                ("reference", reference_system, call.system),
            ):
                reading = call.reading if call.valued else None
                value = float(reading.scores[path(call.order.slot(role), cell)]) if reading else None
                row = columns(call, cell) | {"system": system, "paired_with": paired, "value": value}
                rows.append(row | {"judge": call.judge_id, "status": str(call.status)})
    return rows


def pair_tags(lineage: Mapping[str, Any]) -> dict[str, str]:
    """MLflow tags of a pair run: its judges' (:func:`~._calls.judge_tags`), each prompt's hash and
    the panel's judge kind (``omnieval.<benchmark>.<panel>.judge_kind``)."""
    tags, panel = judge_tags(lineage["judges"]), mlflow_tag_part(str(lineage["panel"]))
    tags |= {f"omnieval.prompt.{panel}.{name}.sha256": p["sha256"] for name, p in lineage["prompts"].items()}
    return tags | {f"omnieval.{lineage['benchmark']}.{panel}.judge_kind": str(lineage["judge_kind"])}


__all__ = [
    "PairCall",
    "PairJudgeResult",
    "PairOrder",
    "PairPanelConfig",
    "PairRunner",
    "PairedReading",
    "RepairPrompt",
    "describe_pair_panel",
    "load_panel_file",
    "pair_calls",
    "pair_score_rows",
    "pair_tags",
    "swap_summary",
]
