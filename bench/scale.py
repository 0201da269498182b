"""Paper-scale judging on a simulated judge server: 32 systems x 900 transitions x 12 judges.

``python -m bench scale`` runs the streaming judge (:func:`omnieval.judges._stream.stream_judges`:
the real record builder, prompt renderer, cache keys, response cache, model-major scheduler, ledger
and parquet scores writer) against ``kind: simulated`` judges at 1 %, 10 % and 100 % of the scale,
each in a fresh child process (so its memory high-water mark is its own), and prints throughput,
the platform's overhead per call, peak memory and how each grows with the number of calls.

Knobs (environment): ``OMNIEVAL_SCALE_FRACTION`` (largest fraction, default 1.0; the others are it
/10 and /100), ``OMNIEVAL_SCALE_TIME_SCALE`` (real seconds slept per simulated second, default
0.0005: the simulated latency is compressed 2,000x, so a median 2 s call sleeps 1 ms and the
figures are throughput of the platform around the calls, not of a real server),
``OMNIEVAL_SCALE_PROFILE=1`` (cProfile the largest run and print the top functions).
Standalone: ``python -m bench.scale --fraction 0.1``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

SYSTEMS = 32
TRANSITIONS = 900
JUDGES = 12
SHARD_SIZE = 90
FAILURE_RATE = 0.01
LATENCY_MEDIAN_S = 2.0
LATENCY_P99_S = 20.0
CONCURRENCY = 32
BATCH_SIZE = 64
GOAL_OVERHEAD_MS = 1.0
GOAL_MEMORY_GROWTH = 1.25
"""Memory counts as flat when the 100 % run's peak RSS is at most this times the 1 % run's."""

OVERHEAD_DEFINITION = (
    "overhead/call = (CPU time of this process during stream_judges, user + system, minus the CPU "
    "the simulated judges spent synthesizing answers inside chat_many) / model calls: what the platform "
    "itself spends per call (records, prompt rendering, cache keys and lookups, group-committed cache "
    "writes, scheduling, the ledger, rows, parquet parts, manifests). wall overhead/call = (wall time "
    "of stream_judges - real time inside chat_many, sleeping included) / model calls: the same plus "
    "disk waits and time spent waiting for a core on this shared machine."
)


def _panel_yaml(time_scale: float) -> str:
    judges = []
    for i in range(JUDGES):
        constrained = "true" if i % 2 == 0 else "false"
        judges.append(
            textwrap.dedent(
                f"""\
                - id: sim-judge-{i:02d}
                  model: simulated/judge-{i:02d}
                  backend:
                    kind: simulated
                    latency_median_s: {LATENCY_MEDIAN_S}
                    latency_p99_s: {LATENCY_P99_S}
                    failure_rate: {FAILURE_RATE}
                    concurrency: {CONCURRENCY}
                    time_scale: {time_scale}
                    seed: {i}
                  decoding: {{temperature: 0.0, max_tokens: 512}}
                  framing: {{schema_constrained: {constrained}, rationale_first: {constrained}}}
                  batch_size: {BATCH_SIZE}
                  retries: 3
                  retry_backoff_s: 0.0
                """
            )
        )
    body = "".join(textwrap.indent(j, "      ") for j in judges)
    return (
        "name: scale-sim\n"
        "description: twelve simulated text judges for the scale bench\n"
        "tracks:\n  text:\n    judges:\n" + body
    )


def make_inputs(root: Path, n_systems: int, n_transitions: int) -> tuple[list[Any], dict[str, Path]]:
    """Synthetic transitions (one small book per 30 pages) and text-only candidate folders."""
    import numpy as np
    from PIL import Image

    import omnieval.benchmarks  # noqa: F401  (registers the storybench rubrics)
    from omnieval.benchmarks.storybench._records import (
        BookMetadata,
        Character,
        NextPageCondition,
        TargetSpeech,
        Transition,
    )
    from omnieval.candidates import Modality, output_path

    media = root / "media"
    media.mkdir(parents=True, exist_ok=True)
    image = media / "page.png"
    Image.fromarray(np.zeros((8, 8, 3), dtype=np.uint8)).save(image)
    fox = Character("Pip", "a small orange fox")
    owl = Character("Hazel", "an old owl")
    transitions = []
    for i in range(n_transitions):
        book = f"book{i // 30:03d}"
        meta = BookMetadata(
            "fairy tale", f"lost lantern {i // 30}", "picture book", "past", "third person", (fox, owl)
        )
        transitions.append(
            Transition(
                index=i,
                id=f"sim/{book}/p{i:04d}__p{i + 1:04d}",
                source="sim",
                book=book,
                from_key=f"p{i:04d}",
                to_key=f"p{i + 1:04d}",
                current_image=image,
                current_text=f"Page {i}: Pip walked on with the lantern through the forest.",
                next_image=image,
                next_text=f"Page {i + 1}: Hazel told Pip where the river mice lived.",
                metadata=meta,
                condition=NextPageCondition((fox,), "a forest clearing", f"Describe step {i}", "birdsong"),
                target_speech=TargetSpeech(
                    "Pip", "Whose lantern is this?", "happy", "normal", "high", "male"
                ),
                sample_path=media / "sample.json",
                metadata_path=media / "meta.json",
            )
        )
    candidates: dict[str, Path] = {}
    for s in range(n_systems):
        folder = root / "candidates" / f"system-{s:02d}"
        for t in transitions:
            path = output_path(folder, Modality.TEXT, t.index)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                f"System {s} continues page {t.index}: Pip and Hazel follow the river.", encoding="utf-8"
            )
        candidates[f"system-{s:02d}"] = folder
    return transitions, candidates


def _rss_now_mb() -> float:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return float("nan")


def child(fraction: float, work: Path, time_scale: float, profile: bool) -> dict[str, Any]:
    """One measured run (in its own process): returns its figures."""
    import resource

    from omnieval.judges._stream import stream_judges
    from omnieval_testkit import simulated as _simulated

    n_transitions = max(1, round(TRANSITIONS * fraction))
    transitions, candidates = make_inputs(work / "inputs", SYSTEMS, n_transitions)
    panel = work / "panel.yaml"
    panel.write_text(_panel_yaml(time_scale), encoding="utf-8")
    backends: list[Any] = []
    opened = _simulated.SimulatedChatBackend.__init__

    def track_init(self: Any, *args: Any, **kwargs: Any) -> None:
        opened(self, *args, **kwargs)
        backends.append(self)

    _simulated.SimulatedChatBackend.__init__ = track_init  # type: ignore[method-assign]
    rss_before = _rss_now_mb()
    cpu0 = os.times()
    started = time.perf_counter()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    result = stream_judges(
        transitions,
        candidates,
        panel=str(panel),
        cache_dir=work / "cache",
        out_dir=work / "out",
        shard_size=SHARD_SIZE,
    )
    if profiler is not None:
        profiler.disable()
    wall = time.perf_counter() - started
    cpu1 = os.times()
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    busy = sum(b.stats.busy_s for b in backends)
    sim_cpu = sum(b.stats.cpu_s for b in backends)
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    model_time = sum(b.stats.model_time_s for b in backends)
    failures = sum(b.stats.failures for b in backends)
    calls = result.model_calls
    wall_overhead = (wall - busy) / calls if calls else float("nan")
    overhead = (cpu - sim_cpu) / calls if calls else float("nan")
    figures: dict[str, Any] = {
        "fraction": fraction,
        "records": result.records,
        "calls": calls,
        "failures": failures,
        "shards": len(result.shards),
        "max_shard_records": result.max_shard_records,
        "statuses": result.statuses,
        "wall_s": wall,
        "backend_busy_s": busy,
        "simulated_model_s": model_time,
        "calls_per_s": calls / wall if wall else float("nan"),
        "overhead_ms_per_call": overhead * 1e3,
        "wall_overhead_ms_per_call": wall_overhead * 1e3,
        "simulator_cpu_s": sim_cpu,
        "cpu_s": cpu,
        "load_average": os.getloadavg()[0],
        "rss_before_mb": rss_before,
        "peak_rss_mb": peak_rss_mb,
        "score_rows": result.score_rows,
    }
    if profiler is not None:
        import io
        import pstats

        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        figures["profile"] = out.getvalue()
    # Restart on the same inputs: every shard is committed, so nothing is judged or requested.
    again = stream_judges(
        transitions,
        candidates,
        panel=str(panel),
        cache_dir=work / "cache",
        out_dir=work / "out",
        shard_size=SHARD_SIZE,
    )
    figures["restart_calls"] = again.model_calls
    figures["restart_shards_run"] = again.shards_run
    return figures


def _run_child(fraction: float, time_scale: float, profile: bool, *, last: bool) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="omnieval-scale-"))
    try:
        cmd = [sys.executable, "-m", "bench.scale", "--child", str(fraction), "--work", str(work)]
        cmd += ["--time-scale", str(time_scale)] + (["--profile"] if profile else [])
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"scale child {fraction} failed: {done.stderr[-2000:]}")
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        if last:
            # Unlinking ~350,000 cache files takes minutes on a disk mounted with discard; the
            # figures are in, so the last run's folder is removed in the background.
            subprocess.Popen(["rm", "-rf", str(work)], start_new_session=True)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _pct(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def _growth(small: float, large: float) -> str:
    return f"{large / small:.2f}x" if small else "n/a"


def run(fraction: float | None = None) -> dict[str, Any]:
    top = fraction if fraction is not None else float(os.environ.get("OMNIEVAL_SCALE_FRACTION", "1.0"))
    time_scale = float(os.environ.get("OMNIEVAL_SCALE_TIME_SCALE", "0.0005"))
    profile = os.environ.get("OMNIEVAL_SCALE_PROFILE", "") == "1"
    fractions = [top / 100, top / 10, top]
    total = SYSTEMS * TRANSITIONS * JUDGES
    print(
        f"scale: {SYSTEMS} systems x {TRANSITIONS} transitions x {JUDGES} judges = {total} judge calls at 100 %; "
        f"simulated latency lognormal median {LATENCY_MEDIAN_S} s / p99 {LATENCY_P99_S} s, failure rate "
        f"{FAILURE_RATE:.0%}, concurrency {CONCURRENCY}, batch {BATCH_SIZE}, shard {SHARD_SIZE} transitions, "
        f"time scale {time_scale} (simulated latency compressed {1 / time_scale:,.0f}x)",
        flush=True,
    )
    print(f"  {OVERHEAD_DEFINITION}", flush=True)
    runs: list[dict[str, Any]] = []
    for f in fractions:
        fig = _run_child(f, time_scale, profile and f == top, last=f == fractions[-1])
        runs.append(fig)
        print(
            f"scale {_pct(f)}: {fig['records']} records, {fig['calls']} calls ({fig['failures']} simulated failures "
            f"retried), {fig['calls_per_s']:.0f} calls/s, overhead {fig['overhead_ms_per_call']:.3f} ms/call "
            f"(wall overhead {fig['wall_overhead_ms_per_call']:.3f} ms/call, load average {fig['load_average']:.1f}), peak RSS {fig['peak_rss_mb']:.0f} MB "
            f"(before run {fig['rss_before_mb']:.0f} MB), {fig['shards']} shards of <= {fig['max_shard_records']} "
            f"records, wall {fig['wall_s']:.1f} s, simulated model time {fig['simulated_model_s'] / 3600:.2f} h; "
            f"restart: {fig['restart_calls']} calls, {fig['restart_shards_run']} shards redone",
            flush=True,
        )
        if "profile" in fig:
            print(textwrap.indent(fig.pop("profile"), "    "))
    small, large = runs[0], runs[-1]
    growth = {
        "calls": large["calls"] / small["calls"],
        "calls_per_s": large["calls_per_s"] / small["calls_per_s"],
        "overhead_ms_per_call": large["overhead_ms_per_call"] / small["overhead_ms_per_call"],
        "wall_overhead_ms_per_call": large["wall_overhead_ms_per_call"] / small["wall_overhead_ms_per_call"],
        "peak_rss_mb": large["peak_rss_mb"] / small["peak_rss_mb"],
    }
    print(
        f"scale growth {_pct(fractions[0])} -> {_pct(fractions[-1])}: calls {growth['calls']:.0f}x, throughput "
        f"{_growth(small['calls_per_s'], large['calls_per_s'])}, overhead/call "
        f"{_growth(small['overhead_ms_per_call'], large['overhead_ms_per_call'])}, peak RSS "
        f"{_growth(small['peak_rss_mb'], large['peak_rss_mb'])}"
    )
    # The goal is about the paper's scale; tiny fractions pay each shard's fixed cost (parquet
    # parts, fsyncs) over a few records and are shown, not judged.
    overhead_ok = large["overhead_ms_per_call"] < GOAL_OVERHEAD_MS
    # Same shard size at 10 % and 100 % (90 transitions): there the run grows 10x with no shard
    # growing, so the ratio isolates growth with the number of calls.
    equal = runs[1]["max_shard_records"] == large["max_shard_records"]
    equal_shards = large["peak_rss_mb"] / runs[1]["peak_rss_mb"] if equal else None
    same_size = (
        f"; x{equal_shards:.2f} from {_pct(fractions[1])} to {_pct(fractions[2])} at equal shard size"
        if equal_shards is not None
        else ""
    )
    flat_ok = growth["peak_rss_mb"] <= GOAL_MEMORY_GROWTH
    restart_ok = all(r["restart_calls"] == 0 and r["restart_shards_run"] == 0 for r in runs)
    print(
        f"scale verdict: overhead per call {'MET' if overhead_ok else 'MISSED'} at {_pct(top)} "
        f"({large['overhead_ms_per_call']:.3f} ms, goal < {GOAL_OVERHEAD_MS} ms; "
        + ", ".join(
            f"{_pct(f)}: {r['overhead_ms_per_call']:.3f}" for f, r in zip(fractions, runs, strict=True)
        )
        + f"); memory {'FLAT' if flat_ok else 'GROWS'} (peak RSS x{growth['peak_rss_mb']:.2f} "
        f"for x{growth['calls']:.0f} calls, goal <= x{GOAL_MEMORY_GROWTH}{same_size}); restart "
        f"{'redoes nothing' if restart_ok else 'REDID WORK'}"
    )
    return {
        "runs": runs,
        "growth": growth,
        "overhead_goal_met": overhead_ok,
        "memory_flat": flat_ok,
        "peak_rss_ratio_equal_shards": equal_shards,
        "restart_clean": restart_ok,
        "definition": OVERHEAD_DEFINITION,
        "time_scale": time_scale,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    parser.add_argument(
        "--fraction", type=float, default=None, help="largest fraction of the scale (default 1.0)"
    )
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--time-scale", type=float, default=0.0005, help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        assert args.work is not None
        import logging

        logging.disable(logging.WARNING)
        print(json.dumps(child(args.child, args.work, args.time_scale, args.profile), default=str))
        return 0
    run(args.fraction)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
