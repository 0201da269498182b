"""``omnieval lineage RUN``: which data, code, models and judges produced a run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from omnieval.errors import DataError
from omnieval.lineage import Deviation, read_deviations


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "lineage",
        help="print the dataset version, code version, models and hashes behind a run",
        description=(
            "RUN is a run folder (runs/<suite>/<run_id>), a run id (or the start of one) or 'latest': "
            "the newest successful run (of --suite when given, else of any suite; as in omnieval "
            "compare), never a run that did not finish. Prints the dataset version (digest, DVC md5, "
            "git rev), code version, system settings, metric models with their SHA-256, judge "
            "checkpoints and prompt hashes, and the run's deviations from its paper's protocol (id, "
            "what, effect on the numbers). Exit code 2 when RUN is not a run or its lineage.json "
            "is malformed."
        ),
    )
    parser.add_argument("run", help="run folder, run id, or 'latest'")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"))
    parser.add_argument("--suite", default=None, help="the suite whose newest run 'latest' is (default: any)")
    parser.add_argument("--json", action="store_true", help="print the full lineage JSON")
    parser.set_defaults(func=_handle)


def find_run_folder(run: str, runs_dir: Path, suite: str | None = None) -> Path:
    """The run folder RUN names: ``latest`` (:func:`omnieval.compare.latest_run`), a folder, or a
    run id (or its start) under ``runs_dir``.

    Raises:
        DataError: a folder without ``lineage.json``, no run of that id, or no successful run.
    """
    from omnieval.compare import find_run_by_id, latest_run

    if run == "latest":
        return latest_run(runs_dir, suite)
    as_path = Path(run)
    if as_path.is_dir():
        if not (as_path / "lineage.json").is_file():
            raise DataError(
                f"{as_path} is not a run folder: it has no lineage.json "
                "(a run folder is runs/<suite>/<run id>/, written by omnieval run)"
            )
        return as_path
    if as_path.exists():
        raise DataError(f"{as_path} is not a run folder (give a run folder, a run id or 'latest')")
    # One resolver for every command that names a run: an ambiguous start is an error listing the
    # runs, never silently the oldest of them.
    found = find_run_by_id(run, runs_dir)
    if found is not None:
        return found
    raise DataError(f"run {run!r} not found under {runs_dir} (give a run folder, a run id or 'latest')")


_COUNTERS = frozenset(
    {"model_calls", "cache_hits", "statuses", "this_run", "audio_descriptions_computed", "instances"}
)
"""Per-run counts, printed apart from the models (:func:`_judge_calls`)."""


def _models(section: dict[str, Any]) -> list[str]:
    lines: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                if key in _COUNTERS:
                    continue
                walk(f"{prefix}.{key}" if prefix else str(key), sub)
        elif any(
            word in prefix.lower()
            for word in ("model", "sha256", "revision", "path", "encoder", "backbone", "threads")
        ):
            lines.append(f"    {prefix}: {value}")

    walk("", section)
    return lines


def _coverage_note(coverage: Any) -> str:
    """``; judged 2 of 20 rows (dataset.limit 2)`` when the run judged a prefix of the dataset."""
    if not isinstance(coverage, dict) or coverage.get("limit") is None:
        return ""
    return f"; judged {coverage.get('judged')} of {coverage.get('dataset_rows')} rows (dataset.limit {coverage['limit']})"


def _judge_calls(judges: dict[str, Any]) -> list[str]:
    """Per panel: the model calls this run made, told apart from those of a judge output it reused.

    Example:
        >>> _judge_calls({"cpu": {"model_calls": 120, "this_run": {"output_reused": True, "model_calls": 0,
        ...                                                        "drift_anchor_model_calls": 6}}})
        ['    cpu: 0 model calls this run (judge output reused; it was made with 120 calls), drift anchors: 6 calls']
        >>> _judge_calls({"cpu": {"model_calls": 0, "cache_hits": 12, "this_run": {"output_reused": True}}})
        ['    cpu: 0 model calls this run (judge output reused; it was made with 0 calls and 12 cached answers)']
        >>> _judge_calls({"cpu": {"model_calls": 16, "this_run": {"output_reused": False, "model_calls": 16},
        ...                       "instances": {"judged": 2, "dataset_rows": 20, "limit": 2}}})
        ['    cpu: 16 model calls this run; judged 2 of 20 rows (dataset.limit 2)']
    """
    lines: list[str] = []
    for panel, info in judges.items():
        if not isinstance(info, dict):
            continue
        run = info.get("this_run")
        if not isinstance(run, dict):
            # Lineage written before runs told these apart: the count belongs to the judge output.
            lines.append(f"    {panel}: judge output made with {info.get('model_calls', '?')} model calls")
            continue
        line = f"    {panel}: {run.get('model_calls', 0)} model calls this run"
        if run.get("output_reused"):
            made = f"{info.get('model_calls', '?')} calls"
            if info.get("cache_hits"):
                made += f" and {info['cache_hits']} cached answers"
            line += f" (judge output reused; it was made with {made})"
        if "drift_anchor_model_calls" in run:
            line += f", drift anchors: {run['drift_anchor_model_calls']} calls"
        lines.append(line + _coverage_note(info.get("instances")))
    return lines


def _kind(system: Any) -> str:
    """A system's kind; a benchmark with input conditions records it per condition.

    Example:
        >>> _kind({"kind": "oracle"}), _kind({"conditions": {"original": {"kind": "neutral"}}}), _kind({})
        ('oracle', 'neutral', '?')
    """
    if not isinstance(system, dict):
        return "?"
    if system.get("kind"):
        return str(system["kind"])
    conditions = system.get("conditions")
    kinds = {str(c["kind"]) for c in (conditions or {}).values() if isinstance(c, dict) and c.get("kind")}
    return ", ".join(sorted(kinds)) or "?"


def _deviation_lines(deviations: list[Deviation] | None) -> list[str]:
    """The ledger as printed: id and what, then the effect indented under it.

    Example:
        >>> print("\\n".join(_deviation_lines([Deviation("dataset-limit", "Only 2 rows.", "Means over 2.")])))
            dataset-limit: Only 2 rows.
              effect: Means over 2.
        >>> _deviation_lines([])
        ["    none: the run followed the paper's protocol"]
    """
    if deviations is None:
        return ["    (not recorded: this lineage.json predates the deviation ledger)"]
    if not deviations:
        return ["    none: the run followed the paper's protocol"]
    lines: list[str] = []
    for deviation in deviations:
        lines += [f"    {deviation.id}: {deviation.what}", f"      effect: {deviation.effect}"]
    return lines


def _read_lineage(folder: Path) -> dict[str, Any]:
    path = folder / "lineage.json"
    try:
        lineage = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read: {exc}") from None
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(lineage, dict):
        raise DataError(f"{path}: expected a JSON object")
    for key in ("dataset", "code"):
        if not isinstance(lineage.get(key), dict):
            raise DataError(f"{path}: no {key!r} section (not a lineage file omnieval run wrote)")
    read_deviations(lineage, str(path))  # a malformed ledger is refused before anything is printed
    return lineage


def _handle(args: argparse.Namespace) -> int:
    from omnieval.cli._checks import input_dir

    if args.runs_dir.exists() or not Path(args.run).is_dir():
        # A run named by id or 'latest' is looked up there; a missing or non-folder --runs-dir is
        # the argument's fault, said before anything else.
        input_dir("--runs-dir", args.runs_dir)
    folder = find_run_folder(args.run, args.runs_dir, args.suite)
    lineage = _read_lineage(folder)
    if args.json:
        print(json.dumps(lineage, indent=2))
        return 0
    ds, code = lineage["dataset"], lineage["code"]
    print(f"run {lineage.get('run_id')}  ({folder})")
    print(f"  dataset: {ds.get('name', '?')} at {ds.get('path', '?')}")
    print(f"    version (content digest): {ds.get('version', '?')}")
    print(f"    DVC md5: {ds.get('dvc_md5', '?')}   git rev: {ds.get('git_rev', '?')}")
    dirty = " (dirty)" if code.get("git_dirty") else ""
    print(
        f"  code: git {code.get('git_sha', '?')}{dirty}, package digest {str(code.get('package_digest', '?'))[:16]}"
    )
    print("  systems: " + ", ".join(f"{k} ({_kind(v)})" for k, v in lineage.get("systems", {}).items()))
    metric_lines = _models(next(iter(lineage.get("metrics", {}).values()), {}))
    print("  metric models:")
    print("\n".join(metric_lines) or "    (none recorded)")
    print("  judges:")
    print("\n".join(_models(lineage.get("judges", {}))) or "    (none)")
    calls = _judge_calls(lineage.get("judges", {}))
    if calls:
        print("  judge calls:")
        print("\n".join(calls))
    print(f"  seeds: {lineage.get('seeds')}")
    print("  deviations from the paper's protocol:")
    print("\n".join(_deviation_lines(read_deviations(lineage, str(folder / "lineage.json")))))
    return 0
