"""Slow drift: a two-sided tabular CUSUM over a suite's nightly headline metrics.

A night-over-night comparison cannot see a component that loses 0.2 points every night while the
tolerance is 0.5: each step is inside it. A cumulative sum of standardised deviations from a
reference level can, because the deviations add up. This module holds

- :func:`cusum`: the detector on one series of nightly values (numpy only, no I/O);
- :func:`read_history` / :func:`detect_trends`: the suite's parent runs in MLflow (the
  ``<system>/<metric key>`` headline metrics the track stage logs), one per calendar day (the
  latest: a rerun replaces its day's night, :func:`one_per_day`), turned into one detector per
  (system, headline component);
- :func:`trend_document`, :func:`trend_lines`, :func:`trend_figure`: what ``omnieval trend`` prints
  and draws;
- :func:`nightly_trend`: the nightly's hook (``trend.json`` beside ``regression.json``, a reason
  line when a component drifts worse).

The detector (docs/nightly.md, "Slow drift"): the first ``reference_nights`` (k) nights of the window
give the reference level mu (their median) and the noise scale sigma (1.4826 x the median absolute
deviation of their night-to-night differences, / sqrt 2, floored at ``min_scale``). Differences
rather than the values themselves, so that a drift already running inside the reference window
does not pass for noise. Each later night x gives z = (x - mu) / sigma, signed so that positive
is worse (``lower_is_better`` flips it), and

    worse_t  = max(0, worse_{t-1}  + z_t - slack)
    better_t = max(0, better_{t-1} - z_t - slack)

A side whose statistic is above ``threshold`` (h) on the last night is a detected shift; its
detection night is the first night of that run above h, and the shift is estimated to have started
the night after the statistic last was 0.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo

import numpy as np

from omnieval.errors import DataError

if TYPE_CHECKING:
    from omnieval.config import SuiteConfig

Direction = Literal["worse", "better"]

DEFAULT_NIGHTS = 30
"""Nights (finished parent runs) the detector looks at: ``omnieval trend --nights``."""
TREND_FILE = "trend.json"
TREND_FIGURE = "report_trend.png"
"""The nightly's plot in the run folder; ``report_*.png`` figures are logged to MLflow with the report."""


@dataclass(frozen=True)
class CusumParams:
    """The detector's settings; the defaults are the ones the tests check (docs/nightly.md).

    With these defaults a component that gets 0.2 points worse every night, with night-to-night
    noise of 0.1 (standard deviation), is flagged by night 14 when the drift starts on the first
    night of the window, and within 9 nights of its start when it starts after the reference
    nights. A flat history crosses the threshold somewhere in 60 nights in 1.4 % of seeds at noise
    0.1 (the scale floor helps there) and in 4.6 % when the floor plays no part (noise 1.0).
    tests/compare/test_trend.py measures all of these on fixed seeds.

    Attributes:
        reference_nights: k, the first nights of the window that set the reference level and scale.
        slack: k_ref, in units of sigma: a deviation smaller than this adds nothing. Large (2 sigma)
            because mu and sigma come from only k nights and their error would otherwise add up.
        threshold: h, in units of sigma: a statistic above it is a shift.
        min_scale: the least sigma (in the metric's own points), so that a system whose scores
            never moved (an oracle, a deterministic metric) is not flagged for a rounding change.
    """

    reference_nights: int = 10
    slack: float = 2.0
    threshold: float = 10.0
    min_scale: float = 0.05

    def __post_init__(self) -> None:
        if self.reference_nights < 2:
            raise ValueError("reference_nights must be at least 2 (the scale needs two differences)")
        if self.slack < 0 or self.threshold <= 0 or self.min_scale <= 0:
            raise ValueError("slack must be >= 0, threshold and min_scale > 0")


@dataclass(frozen=True)
class CusumResult:
    """The detector's state on one series (indices are 0-based positions in the series).

    Attributes:
        reference: mu, the median of the reference nights (None without enough history).
        scale: sigma used to standardise (None without enough history).
        worse: the worse-side statistic per night (0 on the reference nights).
        better: the better-side statistic per night.
        statistic: the last night's statistic of the detected side, else the larger of the two.
        threshold: h.
        shift_detected: a side is above h on the last night.
        direction: that side ("worse" first when both are), None without a shift.
        detected_at: the first night of the run above h that reaches the last night.
        since: the night the shift is estimated to start (after the statistic's last 0).
        note: why nothing could be computed (too few nights), else None.
    """

    reference: float | None
    scale: float | None
    worse: tuple[float, ...]
    better: tuple[float, ...]
    statistic: float
    threshold: float
    shift_detected: bool
    direction: Direction | None
    detected_at: int | None
    since: int | None
    note: str | None = None


def robust_scale(reference: np.ndarray[Any, np.dtype[np.float64]]) -> float:
    """1.4826 x MAD of the successive differences, / sqrt 2: the noise of one night.

    The differences of a steady drift are constant, so their spread is the noise alone.

    >>> round(robust_scale(np.array([0.0, 0.2, 0.4, 0.6, 0.8])), 6)
    0.0
    >>> round(robust_scale(np.array([0.0, 1.0, 0.0, 1.0, 0.0])), 4)
    1.0484
    """
    diffs = np.diff(reference)
    if diffs.size == 0:
        return 0.0
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    return 1.4826 * mad / math.sqrt(2.0)


def _run_start(stat: Sequence[float], last: int, h: float) -> tuple[int, int]:
    """(first night of the above-h run ending at ``last``, night after the last zero before it)."""
    detected = last
    while detected - 1 >= 0 and stat[detected - 1] > h:
        detected -= 1
    since = detected
    while since - 1 >= 0 and stat[since - 1] > 0:
        since -= 1
    return detected, since


def cusum(
    values: Sequence[float], *, lower_is_better: bool = False, params: CusumParams | None = None
) -> CusumResult:
    """Two-sided tabular CUSUM of one nightly series, oriented so that "worse" is the bad direction.

    Args:
        values: one value per night, oldest first; NaN for a night without the value (the
            statistics carry over that night unchanged).
        lower_is_better: a smaller value is better (error rates): a rise is "worse".
        params: k, k_ref, h and the scale floor (:class:`CusumParams` defaults when None).

    Returns:
        The statistics per night and the state on the last night (:class:`CusumResult`).
    """
    p = params or CusumParams()
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    finite = np.flatnonzero(np.isfinite(x))
    if finite.size <= p.reference_nights:
        zeros = (0.0,) * n
        return CusumResult(
            None,
            None,
            zeros,
            zeros,
            0.0,
            p.threshold,
            False,
            None,
            None,
            None,
            note=f"needs more than {p.reference_nights} nights with a value, has {finite.size}",
        )
    ref_idx = finite[: p.reference_nights]
    ref = x[ref_idx]
    mu = float(np.median(ref))
    sigma = max(robust_scale(ref), p.min_scale)
    sign = 1.0 if lower_is_better else -1.0
    worse = np.zeros(n)
    better = np.zeros(n)
    start = int(ref_idx[-1]) + 1
    w = b = 0.0
    for t in range(start, n):
        if np.isfinite(x[t]):
            z = sign * (x[t] - mu) / sigma
            w = max(0.0, w + z - p.slack)
            b = max(0.0, b - z - p.slack)
        worse[t], better[t] = w, b
    h = p.threshold
    last = n - 1
    direction: Direction | None = "worse" if worse[last] > h else "better" if better[last] > h else None
    detected_at = since = None
    if direction is not None:
        stat = worse if direction == "worse" else better
        detected_at, since = _run_start(stat.tolist(), last, h)
        statistic = float(stat[last])
    else:
        statistic = float(max(worse[last], better[last]))
    return CusumResult(
        mu,
        sigma,
        tuple(float(v) for v in worse),
        tuple(float(v) for v in better),
        statistic,
        h,
        direction is not None,
        direction,
        detected_at,
        since,
    )


# -- the suite's history in MLflow -------------------------------------------------------------------


@dataclass(frozen=True)
class Night:
    """One finished parent run of the suite: its id, start and ``<system>/<metric key>`` metrics."""

    run_id: str
    started: datetime
    metrics: Mapping[str, float]
    benchmark: str = ""


@dataclass(frozen=True)
class ComponentTrend:
    """The detector on one (system, headline component) over the window's nights."""

    system: str
    component: str
    """The MLflow metric key after ``<system>/``, e.g. ``storybench.valid_only.total_average``."""
    lower_is_better: bool
    values: tuple[float, ...]
    result: CusumResult


@dataclass(frozen=True)
class TrendReport:
    """Everything ``omnieval trend`` shows: the nights, the settings, one trend per component."""

    suite: str
    experiment: str
    nights: tuple[Night, ...]
    params: CusumParams
    components: tuple[ComponentTrend, ...] = field(default_factory=tuple)

    @property
    def drifting_worse(self) -> list[ComponentTrend]:
        """Components whose worse side is above the threshold tonight."""
        return [c for c in self.components if c.result.direction == "worse"]


def _store_ready() -> bool:
    from omnieval.tracking.pending import is_offline

    if is_offline():  # the run folder is written without the server: no history to read
        return False
    # Reading the history must not create an empty local store (tracking_uri() would).
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return True
    from omnieval.tracking import DEFAULT_STORE

    return (DEFAULT_STORE / "mlflow.db").is_file()


def night_day(night: Night, timezone: str = "UTC") -> date:
    """The calendar day of ``night`` in ``timezone`` (an IANA name): what makes two runs one night.

    >>> from datetime import datetime
    >>> late = Night("r", datetime(2026, 12, 3, 23, 30, tzinfo=UTC), {})
    >>> night_day(late), night_day(late, "Europe/Paris")
    (datetime.date(2026, 12, 3), datetime.date(2026, 12, 4))
    """
    return night.started.astimezone(ZoneInfo(timezone)).date()


def one_per_day(nights: Iterable[Night], timezone: str = "UTC") -> list[Night]:
    """The latest night of each calendar day in ``timezone``, oldest first.

    A suite run again on the same day (a manual rerun, a fix after a failed gate) replaces that
    day's night instead of adding one: the detector's units are nights, and two runs of one day
    would count its value twice and shorten the window.
    """
    latest: dict[date, Night] = {}
    for night in sorted(nights, key=lambda n: n.started):
        latest[night_day(night, timezone)] = night
    return sorted(latest.values(), key=lambda n: n.started)


def read_history(
    experiment: str,
    *,
    nights: int = DEFAULT_NIGHTS,
    exclude: str | None = None,
    timezone: str = "UTC",
) -> list[Night]:
    """The last ``nights`` nights of ``experiment``, oldest first: per calendar day (in ``timezone``)
    the latest finished parent run (``omnieval.kind=suite``).

    Failed runs (a gate stopped them) and runs still in progress are not nights of the history;
    ``exclude`` (a run id, tonight's) is left out.

    Raises:
        DataError: no MLflow store, no such experiment, or no finished run in it.
    """
    if nights < 1:
        raise DataError(f"--nights must be at least 1, got {nights}")
    if not _store_ready():
        raise DataError(
            "no MLflow store here (mlflow/mlflow.db) and MLFLOW_TRACKING_URI is not set: no nightly history"
        )
    from mlflow.tracking import MlflowClient

    from omnieval.tracking import tracking_uri

    client = MlflowClient(tracking_uri())
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise DataError(f"MLflow has no experiment {experiment!r}: no nightly history for this suite")
    # Newest first, so the first run seen of a day is its latest; pages until ``nights`` days are
    # found, since reruns make the number of runs to read unknown in advance.
    history: list[Night] = []
    days: set[date] = set()
    token: str | None = None
    while len(history) < nights:
        page = client.search_runs(
            [found.experiment_id],
            filter_string="tags.`omnieval.kind` = 'suite' and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"],
            max_results=max(50, 2 * nights),
            page_token=token,
        )
        for run in page:
            if run.info.run_id == exclude:
                continue
            night = Night(
                run.info.run_id,
                datetime.fromtimestamp(run.info.start_time / 1000, tz=UTC),
                {k: float(v) for k, v in run.data.metrics.items() if "/" in k},
                run.data.tags.get("omnieval.benchmark", ""),
            )
            day = night_day(night, timezone)
            if day not in days and len(history) < nights:
                days.add(day)
                history.append(night)
        token = page.token
        if not token:
            break
    if not history:
        raise DataError(f"MLflow experiment {experiment!r} has no finished suite run: no nightly history")
    return history[::-1]


def component_direction(lower_is_better: Iterable[str], benchmark: str) -> Callable[[str], bool]:
    """``key -> lower is better`` for MLflow keys ``<benchmark>.<component>`` of one benchmark.

    The benchmark names components as ``omnieval compare`` does (``original.wer``, ``total_average``);
    a key matches one when it is the component or ends with ``.<component>`` (storybench prefixes
    the policy: ``valid_only.total_average``).
    """
    lower = tuple(lower_is_better)
    prefix = f"{benchmark}."

    def is_lower(key: str) -> bool:
        name = key[len(prefix) :] if key.startswith(prefix) else key
        return any(name == c or name.endswith(f".{c}") for c in lower)

    return is_lower


def detect_trends(
    nights: Sequence[Night],
    *,
    suite: str,
    experiment: str,
    lower_is_better: Callable[[str], bool] = lambda key: False,
    patterns: Sequence[str] = (),
    params: CusumParams | None = None,
) -> TrendReport:
    """Run :func:`cusum` on every (system, metric) series of the nights.

    Args:
        nights: the window, oldest first.
        lower_is_better: whether a metric key (after ``<system>/``) is better when smaller.
        patterns: ``fnmatch`` patterns of the keys to follow (the benchmark's headline
            ``mlflow_patterns``); empty = every ``<system>/<key>`` metric of the parent runs.
    """
    import fnmatch

    p = params or CusumParams()
    series: dict[tuple[str, str], list[float]] = {}
    for k, night in enumerate(nights):
        for name, value in night.metrics.items():
            system, _, key = name.partition("/")
            if patterns and not any(fnmatch.fnmatchcase(key, pat) for pat in patterns):
                continue
            column = series.setdefault((system, key), [math.nan] * len(nights))
            column[k] = value
    components = tuple(
        ComponentTrend(
            system,
            key,
            lower_is_better(key),
            tuple(v),
            cusum(v, lower_is_better=lower_is_better(key), params=p),
        )
        for (system, key), v in sorted(series.items())
    )
    return TrendReport(suite, experiment, tuple(nights), p, components)


# -- output ------------------------------------------------------------------------------------------


def _night_number(index: int | None) -> int | None:
    return None if index is None else index + 1


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def drift_reason(trend: ComponentTrend) -> str:
    """The verdict's reason line for a component drifting worse."""
    since = trend.result.since or 0
    nights = len(trend.values) - since
    return f"slow drift: {trend.system} {trend.component} worse for {nights} nights (CUSUM)"


def trend_document(report: TrendReport) -> dict[str, Any]:
    """The JSON document of ``omnieval trend --json`` and of the nightly's ``trend.json``.

    Night numbers are 1-based positions in ``runs`` (oldest first).
    """
    p = report.params
    components = []
    for c in report.components:
        r = c.result
        components.append(
            {
                "system": c.system,
                "component": c.component,
                "lower_is_better": c.lower_is_better,
                "reference": r.reference,
                "scale": r.scale,
                "statistic": r.statistic,
                "threshold": r.threshold,
                "shift_detected": r.shift_detected,
                "direction": r.direction,
                "detected_night": _night_number(r.detected_at),
                "detected_run": None if r.detected_at is None else report.nights[r.detected_at].run_id,
                "since_night": _night_number(r.since),
                "note": r.note,
                "values": [_finite_or_none(v) for v in c.values],
                "worse": list(r.worse),
                "better": list(r.better),
            }
        )
    return {
        "suite": report.suite,
        "experiment": report.experiment,
        "nights": len(report.nights),
        "runs": [
            {"run_id": n.run_id, "started": n.started.isoformat(timespec="seconds")} for n in report.nights
        ],
        "method": {
            "detector": "two-sided tabular CUSUM on standardised nightly values",
            "reference_nights": p.reference_nights,
            "slack": p.slack,
            "threshold": p.threshold,
            "min_scale": p.min_scale,
            "reference": "median of the reference nights",
            "scale": "1.4826 x MAD of the reference nights' successive differences / sqrt(2)",
        },
        "components": components,
        "reasons": [drift_reason(c) for c in report.drifting_worse],
    }


def trend_lines(report: TrendReport) -> list[str]:
    """A plain-text table: one row per (system, component) with the detector's state."""
    p = report.params
    head = (
        f"suite {report.suite}: {len(report.nights)} nights from MLflow experiment {report.experiment}; "
        f"CUSUM k={p.reference_nights} reference nights, slack {p.slack:g}, threshold {p.threshold:g}"
    )
    rows = [
        ("system", "component", "statistic", "threshold", "shift", "direction", "detected", "since", "note")
    ]
    for c in report.components:
        r = c.result
        rows.append(
            (
                c.system,
                c.component,
                f"{r.statistic:.2f}" if r.note is None else "-",
                f"{r.threshold:g}",
                "yes" if r.shift_detected else "no",
                r.direction or "-",
                "-" if r.detected_at is None else f"night {r.detected_at + 1}",
                "-" if r.since is None else f"night {r.since + 1}",
                r.note or "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    table = [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]]).rstrip()
        for row in rows
    ]
    if not report.components:
        table.append("(no headline metric in these runs)")
    return [head, "", *table]


def trend_figure(report: TrendReport, *, max_panels: int = 12) -> bytes:
    """PNG: per component the nightly values (grey, right axis) and both CUSUM statistics with h.

    A suite of many systems has many components; the figure keeps the ``max_panels`` with the
    largest statistic (detected shifts first) so it stays readable, and ``trend.json`` has them all.
    """
    from omnieval.reporting import plot

    ranked = sorted(report.components, key=lambda c: (not c.result.shift_detected, -c.result.statistic))
    comps = ranked[:max_panels]
    n = max(1, len(comps))
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    with plot(size=(4.2 * ncols, 2.8 * nrows), ncols=ncols, nrows=nrows) as canvas:
        if not comps:
            ax = canvas.axes[0][0]
            ax.text(0.5, 0.5, "no headline metric", transform=ax.transAxes, ha="center", color="#888")
            ax.axis("off")
        for k, ax in canvas.panels(len(comps)):
            c = comps[k]
            r = c.result
            nights = list(range(1, len(c.values) + 1))
            values = ax.twinx()
            values.plot(nights, c.values, "o-", color="#9aa0a6", ms=3, lw=1)
            values.tick_params(labelsize=7, colors="#777")
            values.set_ylabel("value", fontsize=7, color="#777")
            ax.plot(nights, r.worse, color="#b3261e", lw=1.6, label="worse")
            ax.plot(nights, r.better, color="#1e7b34", lw=1.2, label="better")
            ax.axhline(r.threshold, color="#333", ls="--", lw=0.9, label=f"h = {r.threshold:g}")
            ax.axvspan(0.5, report.params.reference_nights + 0.5, color="#d7dbe0", alpha=0.5, lw=0)
            if r.detected_at is not None:
                ax.axvline(
                    r.detected_at + 1, color="#b3261e" if r.direction == "worse" else "#1e7b34", lw=0.8
                )
            flag = f"  {r.direction.upper()}" if r.direction else ""
            ax.set_title(
                f"{c.system} · {c.component}{flag}",
                fontsize=8,
                color="#b3261e" if r.direction == "worse" else "black",
            )
            # A drift's statistic grows without bound; keep h readable and print the value instead.
            top = max(max(r.worse), max(r.better))
            if top > 3 * r.threshold:
                ax.set_ylim(-0.05 * 3 * r.threshold, 3 * r.threshold)
                ax.text(
                    0.98,
                    0.92,
                    f"statistic {r.statistic:.0f} (off scale)",
                    transform=ax.transAxes,
                    ha="right",
                    fontsize=7,
                    color="#b3261e",
                )
            ax.set_xlabel("night", fontsize=7)
            ax.set_ylabel("CUSUM (sigma)", fontsize=7)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
            if k == 0:
                ax.legend(fontsize=6, loc="upper left", frameon=False)
        if len(ranked) > len(comps):
            canvas.fig.suptitle(
                f"{len(comps)} of {len(ranked)} components, largest statistic first (all in trend.json)",
                fontsize=8,
            )
            canvas.rect = (0.0, 0.0, 1.0, 1.0 - 0.3 / (2.8 * nrows))
    return canvas.png


def write_trend(
    report: TrendReport, folder: Path, *, figure_name: str = "trend.png", figure: bool = True
) -> tuple[Path, Path | None]:
    """Write ``trend.json`` and (unless ``figure`` is False) the plot into ``folder``; return both paths."""
    from omnieval.jsonio import write_json_atomic

    folder.mkdir(parents=True, exist_ok=True)
    doc_path = folder / TREND_FILE
    write_json_atomic(doc_path, trend_document(report))
    if not figure:
        return doc_path, None
    png_path = folder / figure_name
    png_path.write_bytes(trend_figure(report))
    return doc_path, png_path


# -- the nightly hook --------------------------------------------------------------------------------


def _tonight(config: SuiteConfig, run_id: str) -> Night | None:
    """Tonight's headline metrics, from the report stage's leaderboard (MLflow gets them later)."""
    from omnieval.paths import StatePaths
    from omnieval.tracking import headline_metrics

    path = StatePaths(config.state).report_dir / "leaderboard.json"
    try:
        board = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    metrics = board.get("mlflow_metrics") if isinstance(board, dict) else None
    if not isinstance(metrics, dict):
        return None
    headline = headline_metrics(metrics, config.bench.headline_metric_patterns)
    return Night(run_id, datetime.now(UTC), headline, config.benchmark)


def nightly_trend(config: SuiteConfig, folder: Path, *, run_id: str, document: dict[str, Any]) -> None:
    """The nightly's slow-drift check: history and tonight through :func:`cusum`.

    Writes ``trend.json`` and ``report_trend.png`` into the run folder, records them in
    ``document["trend"]`` (``{"file", "figure", "drifting_worse": [reason, ...]}``; ``figure`` is
    None and no PNG is drawn while no component has more than k nights) and appends one
    reason line per component drifting worse to ``document["reasons"]`` (the verdict itself is unchanged: the
    drift is information for the morning, not a failed night). Never raises: without an MLflow
    history there is nothing to say and the nightly goes on.
    """
    from omnieval.progress import note

    try:
        if not _store_ready():
            return
        timezone = config.schedule.timezone
        try:
            history = read_history(
                config.experiment, nights=DEFAULT_NIGHTS, exclude=run_id, timezone=timezone
            )
        except DataError:
            history = []
        tonight = _tonight(config, run_id)
        # Tonight is the latest run of its day: an earlier run today gives way to it.
        nights = one_per_day([*history, *([tonight] if tonight is not None else [])], timezone)
        nights = nights[-DEFAULT_NIGHTS:]
        if not nights:
            return
        bench = config.bench
        report = detect_trends(
            nights,
            suite=config.suite,
            experiment=config.experiment,
            lower_is_better=component_direction(bench.lower_is_better, bench.name),
            patterns=bench.headline_metric_patterns,
        )
        # Until some component has more than k nights there is no statistic worth a picture.
        drawn = any(c.result.note is None for c in report.components)
        write_trend(report, folder, figure_name=TREND_FIGURE, figure=drawn)
        reasons = [drift_reason(c) for c in report.drifting_worse]
        document["trend"] = {
            "file": TREND_FILE,
            "figure": TREND_FIGURE if drawn else None,
            "drifting_worse": reasons,
        }
        if reasons:
            document["reasons"] = [*document.get("reasons", []), *reasons]
            note(f"[track] {len(reasons)} headline component(s) drifting worse (see {TREND_FILE})")
    except Exception as exc:  # the drift check is extra information; it never fails a night
        note(f"[track] slow drift check skipped: {exc}")
