"""``omnieval lineage RUN``: which data, code, models and judges produced a run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from omnieval.errors import OmnievalError


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "lineage",
        help="print the dataset version, code version, models and hashes behind a run",
        description=(
            "RUN is an MLflow run id, a run folder (runs/<suite>/<run_id>) or 'latest'. Prints the "
            "dataset version (digest, DVC md5, git rev), code version, system settings, metric models "
            "with their SHA-256, judge checkpoints and prompt hashes."
        ),
    )
    parser.add_argument("run", help="MLflow run id, run folder, or 'latest'")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"))
    parser.add_argument("--json", action="store_true", help="print the full lineage JSON")
    parser.set_defaults(func=_handle)


def find_run_folder(run: str, runs_dir: Path) -> Path:
    as_path = Path(run)
    if (as_path / "lineage.json").is_file():
        return as_path
    candidates = sorted(runs_dir.glob("*/*/lineage.json"), key=lambda p: p.stat().st_mtime)
    if run == "latest":
        if not candidates:
            raise OmnievalError(f"no runs under {runs_dir}")
        return candidates[-1].parent
    for lineage in candidates:
        if lineage.parent.name == run or lineage.parent.name.startswith(run):
            return lineage.parent
    raise OmnievalError(f"run {run!r} not found under {runs_dir} (give a run id, a run folder or 'latest')")


def _models(section: dict[str, Any]) -> list[str]:
    lines: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), sub)
        elif any(
            word in prefix.lower() for word in ("model", "sha256", "revision", "path", "encoder", "backbone")
        ):
            lines.append(f"    {prefix}: {value}")

    walk("", section)
    return lines


def _handle(args: argparse.Namespace) -> int:
    folder = find_run_folder(args.run, args.runs_dir)
    lineage = json.loads((folder / "lineage.json").read_text(encoding="utf-8"))
    if args.json:
        print(json.dumps(lineage, indent=2))
        return 0
    ds, code = lineage["dataset"], lineage["code"]
    print(f"run {lineage.get('run_id')}  ({folder})")
    print(f"  dataset: {ds['name']} at {ds['path']}")
    print(f"    version (content digest): {ds['version']}")
    print(f"    DVC md5: {ds['dvc_md5']}   git rev: {ds['git_rev']}")
    print(
        f"  code: git {code['git_sha']}{' (dirty)' if code['git_dirty'] else ''}, package digest {code['package_digest'][:16]}"
    )
    print(
        "  systems: "
        + ", ".join(f"{k} ({v.get('kind', '?')})" for k, v in lineage.get("systems", {}).items())
    )
    metric_lines = _models(next(iter(lineage.get("metrics", {}).values()), {}))
    print("  metric models:")
    print("\n".join(metric_lines) or "    (none recorded)")
    print("  judges:")
    print("\n".join(_models(lineage.get("judges", {}))) or "    (none)")
    print(f"  seeds: {lineage.get('seeds')}")
    return 0
