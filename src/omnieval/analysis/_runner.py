"""The analysis registry and :func:`run_analyses`, which writes one JSON (and plots) per analysis.

An analysis is a function ``(AnalysisContext) -> AnalysisResult`` registered with
:func:`analysis`; it raises :class:`Skip` when the table cannot support it (too few systems, a track
not computed, no human ratings), and the runner then writes ``{"status": "skipped", "reason": ...}``.
Each analysis names the benchmarks whose tables it reads; on another benchmark's table it is
skipped with that reason. Benchmark packages register their analyses when they are imported, and may
register a context class of their own (:func:`register_context`) that gives their analyses a dense
view of the table (storybench's ``StoryContext``); other analyses read ``ctx.scores``.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
import pandas as pd

from omnieval.analysis._config import AnalysisConfig
from omnieval.errors import ConfigError, DataError
from omnieval.jsonio import write_json_atomic
from omnieval.registry import Registry


class Skip(Exception):
    """The analysis cannot run on this table; the message says why."""


PlotFn = Callable[[Path], None]
Headline = tuple[str, ...] | Callable[[Any], dict[str, float]]


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
    func: Callable[[Any], AnalysisResult]
    params: Callable[[AnalysisConfig], dict[str, Any]]
    summary: str
    benchmarks: frozenset[str]
    """The benchmarks whose scores tables it can read."""
    headline: Headline = ()
    """Its scalar headline figures (MLflow metrics): dotted paths into its JSON, or a function of it."""
    inputs: frozenset[str] = frozenset()
    """The :class:`AnalysisConfig` file fields it reads (``humans``, ``capabilities``, ``duplicates``):
    ``omnieval analyze`` refuses such an option when no analysis it runs reads it."""


ANALYSES: Registry[AnalysisSpec] = Registry("analysis")
CONTEXTS: Registry[type[AnalysisContext]] = Registry("analysis context")
"""Benchmark name -> the context class its analyses receive (default :class:`AnalysisContext`)."""

Ctx = TypeVar("Ctx", bound="AnalysisContext")


def _no_params(_config: AnalysisConfig) -> dict[str, Any]:
    return {}


def analysis(
    name: str,
    *,
    summary: str,
    benchmarks: Collection[str],
    params: Callable[[AnalysisConfig], dict[str, Any]] = _no_params,
    headline: Headline = (),
    inputs: Collection[str] = (),
) -> Callable[[Callable[[Ctx], AnalysisResult]], Callable[[Ctx], AnalysisResult]]:
    """Register the decorated function as the analysis ``name`` (its JSON is ``<name>.json``) for
    tables of ``benchmarks``; ``headline`` names its scalar headline figures (dotted JSON paths),
    ``inputs`` the :class:`AnalysisConfig` file fields it reads (``humans``, ...)."""

    def deco(func: Callable[[Ctx], AnalysisResult]) -> Callable[[Ctx], AnalysisResult]:
        spec = AnalysisSpec(name, func, params, summary, frozenset(benchmarks), headline, frozenset(inputs))
        ANALYSES.register(name)(spec)
        return func

    return deco


def register_context(benchmark: str) -> Callable[[type[Ctx]], type[Ctx]]:
    """Class decorator: analyses of ``benchmark``'s tables receive this :class:`AnalysisContext` subclass."""

    def deco(cls: type[Ctx]) -> type[Ctx]:
        CONTEXTS.register(benchmark)(cls)
        return cls

    return deco


@dataclass
class AnalysisContext:
    """The scores table and the config, shared by every analysis of one run.

    ``source`` is the long scores table, or a view of it a benchmark's own context built already
    (e.g. storybench's dense table); benchmark contexts add their views as cached properties.
    """

    source: Any
    config: AnalysisConfig
    benchmark: str

    @property
    def scores(self) -> pd.DataFrame:
        """The long scores table (FORMATS.md section 3)."""
        if not isinstance(self.source, pd.DataFrame):
            raise Skip("needs the long scores table, not a prebuilt table")
        return self.source

    def prepare(self, selected: Sequence[AnalysisSpec]) -> None:
        """Check the inputs before any file is written (raise DataError/ConfigError); default: nothing."""


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


def select_benchmark(scores: pd.DataFrame, benchmark: str | None = None) -> tuple[str, pd.DataFrame]:
    """Return the single benchmark a table holds and the table; raise when it holds several or none.

    Args:
        scores: the long scores table.
        benchmark: the benchmark the caller aggregates; when given, a table of another benchmark
            is an error. None accepts whichever single benchmark the table holds.
    """
    if scores.empty:
        raise DataError("scores table is empty")
    if "benchmark" not in scores.columns:
        raise DataError("scores table has no 'benchmark' column")
    names = sorted(str(b) for b in scores["benchmark"].unique())
    if len(names) != 1:
        raise DataError(
            f"scores table holds several benchmarks {names}; aggregate one at a time "
            "(filter the table on the benchmark column)"
        )
    if benchmark is not None and names[0] != benchmark:
        raise DataError(f"this aggregation is for {benchmark!r} tables; this scores table holds {names[0]!r}")
    return names[0], scores


def analysis_names(benchmark: str | None = None) -> list[str]:
    """Every registered analysis (those for ``benchmark``'s tables when given), sorted.

    Analyses register when their benchmark package is imported (``import omnieval.benchmarks``).
    """
    names = ANALYSES.names()
    return names if benchmark is None else [n for n in names if benchmark in ANALYSES.get(n).benchmarks]


def run_analyses(
    scores: Any,
    out_dir: Path,
    *,
    only: Sequence[str] | None = None,
    config: AnalysisConfig | None = None,
) -> dict[str, AnalysisOutput]:
    """Run the analyses on a scores table and write ``<name>.json`` (and plots) into ``out_dir``.

    Args:
        scores: the long scores table, or a benchmark's prebuilt view of it that has a ``benchmark``
            attribute (storybench's dense table).
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
    source: Any
    if isinstance(scores, pd.DataFrame):
        benchmark, source = select_benchmark(scores)
    else:
        benchmark, source = str(scores.benchmark), scores
    selected = analysis_names(benchmark) if only is None else list(dict.fromkeys(only))
    unknown = [n for n in selected if n not in names]
    if unknown:
        raise ConfigError(f"unknown analyses {unknown}; known: {', '.join(names)}")
    context_class = CONTEXTS.get(benchmark) if benchmark in CONTEXTS else AnalysisContext
    ctx = context_class(source, config, benchmark)
    # An invalid table fails here, before any file is written.
    ctx.prepare([ANALYSES.get(n) for n in selected if benchmark in ANALYSES.get(n).benchmarks])
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
