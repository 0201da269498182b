"""The analysis registry and :func:`run_analyses`, which writes one JSON (and plots) per analysis.

An analysis is a function ``(AnalysisContext) -> AnalysisResult`` registered with
:func:`analysis`; it raises :class:`Skip` when the table cannot support it (too few systems, a track
not computed, no human ratings), and the runner then writes ``{"status": "skipped", "reason": ...}``.
Each analysis names the benchmarks whose tables it reads (default ``storybench``, which read the
dense :class:`StoryTable`); on another benchmark's table it is skipped with that reason. Benchmark
packages register their own analyses (e.g. prism's ``stability``), read from ``ctx.scores``.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from omnieval.analysis._aggregate import Aggregate, PolicyScores, aggregate_table
from omnieval.analysis._config import AnalysisConfig
from omnieval.analysis._schema import MODALITIES, Policy
from omnieval.analysis._table import FloatArray, StoryTable, build_table, select_benchmark
from omnieval.errors import ConfigError
from omnieval.jsonio import write_json_atomic
from omnieval.registry import Registry


class Skip(Exception):
    """The analysis cannot run on this table; the message says why."""


PlotFn = Callable[[Path], None]


@dataclass(frozen=True)
class AnalysisResult:
    """What an analysis returns: its JSON document and plot writers keyed by file-name suffix.

    A plot keyed ``""`` is written to ``<name>.png``, one keyed ``"x"`` to ``<name>_x.png``.
    """

    data: dict[str, Any] | list[Any]
    plots: dict[str, PlotFn] = field(default_factory=dict)


@dataclass(frozen=True)
class AnalysisSpec:
    """A registered analysis: its function, the parameters it uses and a one-line summary."""

    name: str
    func: Callable[[AnalysisContext], AnalysisResult]
    params: Callable[[AnalysisConfig], dict[str, Any]]
    summary: str
    benchmarks: frozenset[str] = frozenset({"storybench"})
    """The benchmarks whose scores tables it can read."""


STORY_TABLE_BENCHMARKS = frozenset({"storybench"})
"""Benchmarks whose tables the runner turns into a :class:`StoryTable` (``ctx.table``)."""

ANALYSES: Registry[AnalysisSpec] = Registry("analysis")


def _no_params(_config: AnalysisConfig) -> dict[str, Any]:
    return {}


def analysis(
    name: str,
    *,
    summary: str,
    params: Callable[[AnalysisConfig], dict[str, Any]] = _no_params,
    benchmarks: Collection[str] = STORY_TABLE_BENCHMARKS,
) -> Callable[[Callable[[AnalysisContext], AnalysisResult]], Callable[[AnalysisContext], AnalysisResult]]:
    """Register the decorated function as the analysis ``name`` (its JSON is ``<name>.json``) for
    tables of ``benchmarks``."""

    def deco(
        func: Callable[[AnalysisContext], AnalysisResult],
    ) -> Callable[[AnalysisContext], AnalysisResult]:
        ANALYSES.register(name)(AnalysisSpec(name, func, params, summary, frozenset(benchmarks)))
        return func

    return deco


@dataclass
class AnalysisContext:
    """The table, its aggregate and the config, shared by every analysis of one run.

    ``source`` is the long scores table or an already built :class:`StoryTable`; ``table`` (the
    dense storybench form) is built on first use, so analyses of other benchmarks never build it.
    """

    source: StoryTable | pd.DataFrame
    config: AnalysisConfig
    benchmark: str = "storybench"

    @cached_property
    def table(self) -> StoryTable:
        if isinstance(self.source, StoryTable):
            return self.source
        return build_table(self.source, n_instances=self.config.n_instances)

    @property
    def scores(self) -> pd.DataFrame:
        """The long scores table (FORMATS.md section 3)."""
        if isinstance(self.source, StoryTable):
            raise Skip("needs the long scores table, not a prebuilt StoryTable")
        return self.source

    @cached_property
    def aggregate(self) -> Aggregate:
        return aggregate_table(self.table)

    def policy(self, policy: Policy) -> PolicyScores:
        return self.aggregate.policies[policy]

    def modalities(self, policy: Policy) -> dict[str, FloatArray]:
        """Modality scores ``(S,)`` of the modalities with at least one computed component."""
        ps = self.policy(policy)
        out = {}
        for m in MODALITIES:
            v = ps.modality(m)
            if v is not None:
                out[m] = v
        return out

    def need_systems(self, k: int) -> None:
        if self.table.n_systems < k:
            raise Skip(f"needs at least {k} systems; the table has {self.table.n_systems}")


@dataclass(frozen=True)
class AnalysisOutput:
    """What :func:`run_analyses` wrote for one analysis."""

    name: str
    status: Literal["ok", "skipped"]
    json_path: Path
    plots: tuple[Path, ...]
    params: dict[str, Any]
    reason: str | None = None
    seconds: float = 0.0


def to_jsonable(obj: Any) -> Any:
    """Plain JSON values: numpy scalars and arrays converted, NaN and infinities as null."""
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.bool_ | bool):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        x = float(obj)
        return x if math.isfinite(x) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_json(path: Path, doc: Any) -> None:
    """Write ``doc`` as indented JSON atomically (temp file, then rename); NaN is refused."""
    write_json_atomic(path, to_jsonable(doc), ensure_ascii=True, allow_nan=False, default=None)


PARAMS_DIR = "_params"
"""Sub-folder of the output folder holding each analysis's parameters (``<name>.json``)."""


def _load_analyses() -> None:
    # Importing the modules registers their analyses; benchmark packages register their own.
    import omnieval.benchmarks  # noqa: F401
    from omnieval.analysis import _bootstrap, _human, _judges, _length, _modality, _sensitivity  # noqa: F401


def analysis_names(benchmark: str | None = None) -> list[str]:
    """Every registered analysis (those for ``benchmark``'s tables when given), sorted."""
    _load_analyses()
    names = ANALYSES.names()
    return names if benchmark is None else [n for n in names if benchmark in ANALYSES.get(n).benchmarks]


def run_analyses(
    scores: pd.DataFrame | StoryTable,
    out_dir: Path,
    *,
    only: Sequence[str] | None = None,
    config: AnalysisConfig | None = None,
) -> dict[str, AnalysisOutput]:
    """Run the analyses on a scores table and write ``<name>.json`` (and plots) into ``out_dir``.

    Args:
        scores: the scores table (or an already built :class:`StoryTable`).
        out_dir: output folder (created); each analysis's parameters also go to ``_params/<name>.json``.
        only: names of the analyses to run; default all of those for the table's benchmark (a named
            analysis of another benchmark is written as skipped, with the reason).
        config: options; default :class:`AnalysisConfig` ().

    Returns:
        Per analysis, what was written and whether it ran or was skipped (and why).

    Raises:
        ConfigError: ``only`` names an unknown analysis.
        DataError: the scores table (or a human-ratings / duplicates file) is invalid.
    """
    config = config or AnalysisConfig()
    names = analysis_names()
    source: StoryTable | pd.DataFrame
    if isinstance(scores, StoryTable):
        benchmark, source = scores.benchmark, scores
    else:
        benchmark, source = select_benchmark(scores)
    selected = analysis_names(benchmark) if only is None else list(dict.fromkeys(only))
    unknown = [n for n in selected if n not in names]
    if unknown:
        raise ConfigError(f"unknown analyses {unknown}; known: {', '.join(names)}")
    ctx = AnalysisContext(source, config, benchmark)
    if benchmark in STORY_TABLE_BENCHMARKS and any(benchmark in ANALYSES.get(n).benchmarks for n in selected):
        _ = ctx.table  # an invalid table fails here, before any file is written
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs: dict[str, AnalysisOutput] = {}
    for name in selected:
        spec = ANALYSES.get(name)
        params = spec.params(config)
        json_path = out_dir / f"{name}.json"
        start = time.perf_counter()
        try:
            if benchmark not in spec.benchmarks:
                raise Skip(
                    f"applies to {', '.join(sorted(spec.benchmarks))} scores tables; this table holds {benchmark}"
                )
            with warnings.catch_warnings():
                # Undefined statistics (constant columns, all-NaN slices) become null in the JSON.
                warnings.simplefilter("ignore", RuntimeWarning)
                result = spec.func(ctx)
        except Skip as why:
            write_json(json_path, {"analysis": name, "status": "skipped", "reason": str(why)})
            write_json(out_dir / PARAMS_DIR / f"{name}.json", params)
            outputs[name] = AnalysisOutput(
                name, "skipped", json_path, (), params, str(why), time.perf_counter() - start
            )
            continue
        data = result.data
        if isinstance(data, dict):
            data = {"analysis": name, "status": "ok", "params": params, **data}
        write_json(json_path, data)
        write_json(out_dir / PARAMS_DIR / f"{name}.json", params)
        plots = []
        for suffix, draw in result.plots.items():
            png = out_dir / (f"{name}.png" if not suffix else f"{name}_{suffix}.png")
            draw(png)
            plots.append(png)
        outputs[name] = AnalysisOutput(
            name, "ok", json_path, tuple(plots), params, None, time.perf_counter() - start
        )
    return outputs
