"""``omnieval judge check`` and ``omnieval judge pin-known-set``: judges prove themselves on a known set.

Registered under ``omnieval judge`` by :mod:`omnieval.cli._judge` (:func:`add_check_parsers`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.errors import ConfigError, DataError

if TYPE_CHECKING:
    from omnieval.benchmarks import Benchmark
    from omnieval.judges import KnownSetRunner

BELOW_FLOOR_EXIT = 3
"""Exit status of ``judge check`` when a judge is below its floor on a track (as ``omnieval run
--fail-on-regression`` exits 3 on NO-GO)."""
NOTHING_CHECKED_EXIT = 1
"""Exit status when no judge of the panel could run here (nothing was checked)."""
DEFAULT_CACHE = Path("state/.cache")
"""The shared cache the judge stage uses (``state/.cache`` beside the suites' state folders)."""


def add_check_parsers(judge_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    check = judge_sub.add_parser(
        "check",
        help="run a panel's judges on the benchmark's known set and grade them against a floor",
        description=(
            "Run a judge panel on its benchmark's pinned known set: the bundled sample's ground truth "
            "beside damaged copies of it (shuffled words, a wrong character name, another book's page, "
            "another line or voice, a silent or swapped soundtrack, a frozen picture), built at check "
            "time from the dataset. Prints per judge and track the accuracy (share of known pairs "
            "where the ground truth scored strictly above its damaged copy; a tie, or a pair without "
            "a valid verdict, counts as wrong) and the agreement (Kendall's tau-a with the known "
            "order; ties count 0), against a floor. The result is cached by the judges' identity and "
            "the set's hash: a rerun with the same judges makes no model call. Exit status: 0 all "
            f"judges at or above their floor, {BELOW_FLOOR_EXIT} a judge below it, "
            f"{NOTHING_CHECKED_EXIT} no judge of the panel could run here, 2 bad input."
        ),
    )
    check.add_argument(
        "panel",
        metavar="PANEL",
        help="a shipped panel (omnieval judge panels lists them: cpu, paper-a, cpu-cascade, ...) or a panel YAML file",
    )
    check.add_argument(
        "--benchmark",
        metavar="NAME",
        default=None,
        help="the panel's benchmark (needed for a panel YAML file when several benchmarks have a known set)",
    )
    check.add_argument(
        "--floor",
        type=_share,
        default=None,
        metavar="X",
        help="lowest accuracy (0-1) a judge may have on a track (default 0.7)",
    )
    check.add_argument(
        "--track-floor",
        action="append",
        default=[],
        metavar="KEY=X",
        help="a floor for one track, judge or judge/track (repeatable), e.g. speech=0.6",
    )
    check.add_argument(
        "--dataset",
        type=Path,
        default=None,
        metavar="DIR",
        help="the dataset the set's items name (default: the benchmark's bundled sample)",
    )
    check.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE,
        metavar="DIR",
        help=f"response cache and result cache folder (default {DEFAULT_CACHE}, the judge stage's)",
    )
    check.add_argument("--json", action="store_true", help="print the check document as JSON")
    check.set_defaults(func=_check)

    pin = judge_sub.add_parser(
        "pin-known-set",
        help="rebuild a benchmark's known set and write the built variants' hashes into its manifest",
        description=(
            "Build every variant of the benchmark's known set from its dataset and write their "
            "SHA-256 into the set's manifest (the pins a check compares what it builds with). Run it "
            "after a deliberate change of the set or of how variants are made, review, then commit."
        ),
    )
    pin.add_argument("benchmark", metavar="BENCHMARK", help="a registered benchmark with a known set")
    pin.add_argument("--dataset", type=Path, default=None, metavar="DIR", help="default: the bundled sample")
    pin.set_defaults(func=_pin)


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


def _overrides(pairs: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--track-floor {pair!r}: expected KEY=X (a track, judge or judge/track)")
        try:
            out[key] = _share(value)
        except argparse.ArgumentTypeError as exc:
            raise ConfigError(f"--track-floor {pair!r}: {exc}") from None
    return out


def panel_benchmark(panel: str, benchmark: str | None) -> Benchmark:
    """The benchmark whose panel ``panel`` is (``--benchmark`` when given); ConfigError when none or
    several could be meant."""
    from omnieval.cli._registries import load_benchmarks, registered_benchmark

    is_file = panel.endswith((".yaml", ".yml")) and Path(panel).is_file()
    if benchmark is not None:
        bench = registered_benchmark(benchmark)
        if not is_file and panel not in bench.panel_names():
            raise ConfigError(
                f"unknown judge panel {panel!r} of {bench.name}; known: {', '.join(bench.panel_names()) or 'none'}"
            )
        return bench
    benchmarks = load_benchmarks()
    judged = [benchmarks.get(n) for n in benchmarks.names() if benchmarks.get(n).judge_tracks]
    if is_file:
        with_sets = [b for b in judged if b.has_known_set()]
        if len(with_sets) == 1:
            return with_sets[0]
        raise ConfigError(
            f"{panel} is a panel file: pass --benchmark NAME ({', '.join(b.name for b in with_sets)})"
        )
    owners = [b for b in judged if panel in b.panel_names()]
    if not owners:
        known = sorted({p for b in judged for p in b.panel_names()})
        raise ConfigError(f"unknown judge panel {panel!r}; known: {', '.join(known)} (or a panel YAML file)")
    if len(owners) > 1:
        raise ConfigError(
            f"judge panel {panel!r} is shipped by {', '.join(b.name for b in owners)}: pass --benchmark NAME"
        )
    return owners[0]


def _runner(bench: Benchmark, dataset: Path | None) -> KnownSetRunner:
    if not bench.has_known_set():
        raise ConfigError(f"benchmark {bench.name} has no known set to check its judges on")
    root = Path(dataset) if dataset is not None else bench.default_dataset
    if not root.is_dir():
        raise DataError(
            f"dataset {root} not found (restore the sample with `dvc pull`, or pass --dataset DIR)"
        )
    runner = bench.known_set(bench.instances(bench.load(root)), bench.metrics_config())
    if runner is None:
        raise ConfigError(f"benchmark {bench.name} has no known set to check its judges on")
    return runner


def _check(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks

    overrides = _overrides(args.track_floor)
    if args.dataset is not None:
        _checks.input_dir("--dataset", args.dataset)
    _checks.output_dir("--cache-dir", args.cache_dir)
    if args.panel.endswith((".yaml", ".yml")):
        _checks.yaml_mapping("PANEL", Path(args.panel), what="a judge panel (a YAML mapping)")
    from omnieval.judges import DEFAULT_FLOOR, Floors, check_known_set
    from omnieval.progress import progress_bar

    bench = panel_benchmark(args.panel, args.benchmark)
    runner = _runner(bench, args.dataset)
    floors = Floors(args.floor if args.floor is not None else DEFAULT_FLOOR, overrides)
    with progress_bar(f"judge check {args.panel}: model calls", 0) as update:

        def report(_label: str, done: int, total: int) -> None:
            update(done, total)

        document = check_known_set(
            runner, args.panel, cache_dir=args.cache_dir, floors=floors, progress=report
        )
    stored = args.cache_dir / "meta_eval" / f"{document['key']}.json"
    if stored.is_file():  # a check where no judge could run is not kept
        document = {**document, "cache": str(stored)}
    if args.json:
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        for line in check_lines(document):
            print(line)
    if document["below_floor"]:
        return BELOW_FLOOR_EXIT
    if not document["checked"]:
        if not args.json:
            print("error: no judge of this panel could run here: nothing was checked", file=sys.stderr)
        return NOTHING_CHECKED_EXIT
    return 0


def _fmt(value: Any, spec: str = ".2f") -> str:
    return "n/a" if value is None else format(value, spec)


def check_lines(document: dict[str, Any]) -> list[str]:
    """The terminal report of a :func:`omnieval.judges.check_known_set` document."""
    known = document["set"]
    lines = [
        f"known set {known['name']} (sha256 {known['sha256'][:12]}): {known['items']} items, "
        f"{known['pairs']} known pairs; panel {document['panel']} ({document['benchmark']})",
    ]
    rows = [
        (judge, track, entry)
        for judge, tracks in document["judges"].items()
        for track, entry in tracks.items()
    ]
    if rows:
        width = max(len("judge"), *(len(j) for j, _, _ in rows))
        twidth = max(len("track"), *(len(t) for _, t, _ in rows))
        lines.append(
            f"{'judge':{width}s}  {'track':{twidth}s}  pairs  right  ties  wrong  invalid  accuracy"
            "  agreement  expected  floor  status"
        )
        for judge, track, e in rows:
            if e["status"] == "unavailable":
                lines.append(f"{judge:{width}s}  {track:{twidth}s}  unavailable: {e.get('reason', '')}")
                continue
            status = "BELOW FLOOR" if e["status"] == "below_floor" else "ok"
            weighted = (e.get("expected") or {}).get("accuracy")
            lines.append(
                f"{judge:{width}s}  {track:{twidth}s}  {e['n_pairs']:5d}  {e['correct']:5d}  {e['ties']:4d}"
                f"  {e['wrong']:5d}  {e['invalid']:7d}  {_fmt(e['accuracy']):>8s}  {_fmt(e['agreement'], '+.2f'):>9s}"
                f"  {_fmt(weighted):>8s}  {_fmt(e['floor']):>5s}  {status}"
            )
    for track, why in (document.get("unavailable") or {}).items():
        lines.append(f"track {track}: not checked ({why})")
    lines.append(f"rule: {document['rule']}")
    lines.append(
        "expected: accuracy on the probability-weighted scores (judge_expected), where the judge reports "
        "them; the floor applies to the greedy accuracy"
    )
    pins = document.get("pins") or {}
    if pins.get("mismatched"):
        lines.append(
            f"note: {len(pins['mismatched'])} built variant(s) differ from the pinned hashes "
            f"(e.g. {pins['mismatched'][0]}); the check ran on what was built"
        )
    reused = " (result reused: the same judges were checked before)" if document["reused"] else ""
    lines.append(f"model calls: {document['model_calls']}, cache hits: {document['cache_hits']}{reused}")
    if "cache" in document:
        lines.append(f"result: {document['cache']}")
    for entry in document["below_floor"]:
        lines.append(
            f"BELOW FLOOR: {entry['judge']} on track {entry['track']}: accuracy {_fmt(entry['accuracy'])} "
            f"< floor {_fmt(entry['floor'])} ({entry['n_pairs']} pairs)"
        )
    return lines


def _pin(args: argparse.Namespace) -> int:
    import tempfile

    from omnieval.cli._registries import registered_benchmark
    from omnieval.judges import pin_known_set

    if args.dataset is not None:
        from omnieval.cli import _checks

        _checks.input_dir("--dataset", args.dataset)
    bench = registered_benchmark(args.benchmark)
    runner = _runner(bench, args.dataset)
    with tempfile.TemporaryDirectory(prefix="omnieval-known-set-") as scratch:
        built = runner.build(Path(scratch), runner.manifest.tracks())
    before = {f"{i.id}/{v.id}": v.sha256 for i in runner.manifest.items for v in i.variants}
    pinned = pin_known_set(runner.source, built)
    changed = sum(1 for k, v in built.items() if before.get(k) != v)
    print(
        f"pinned {len(built)} variants of {pinned.name} ({changed} changed) to {runner.source}; "
        f"set sha256 {pinned.sha256()[:12]}"
    )
    return 0
