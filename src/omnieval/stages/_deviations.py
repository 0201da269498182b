"""The run's deviation ledger from its suite (FORMATS.md section 12), shared by the report and track
stages so ``report.html`` and ``lineage.json`` list the same entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnieval.benchmarks import Deviation, RunSettings
from omnieval.config import SuiteConfig
from omnieval.errors import ConfigError
from omnieval.stages._common import read_json, state_paths


def recorded_metrics(config: SuiteConfig) -> dict[str, Any]:
    """System -> the lineage its metrics stage wrote, for the systems that have one."""
    paths = state_paths(config)
    out: dict[str, Any] = {}
    for sid in config.systems:
        path = paths.metrics_lineage(sid)
        if path.is_file():
            out[sid] = read_json(path).get("lineage") or {}
    return out


def run_deviations(config: SuiteConfig, recorded: Mapping[str, Mapping[str, Any]]) -> list[Deviation]:
    """The suite's deviation ledger: its benchmark's declared deviations that apply to this suite's
    judge panels, ``metrics:`` config and ``dataset.limit``, plus the framework's own.

    Args:
        config: The suite.
        recorded: System -> its metrics lineage (:func:`recorded_metrics`).

    Raises:
        ConfigError: the benchmark declares two deviations with one id.
    """
    settings = RunSettings(
        panels=tuple(config.panels),
        metrics=config.metrics,
        dataset_limit=config.dataset.limit,
        recorded=recorded,
    )
    try:
        return config.bench.deviation_ledger(settings)
    except ValueError as exc:
        raise ConfigError(f"benchmark {config.benchmark}: {exc}") from None
