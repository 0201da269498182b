"""kill -9 anywhere: a harness that kills ``omnieval run`` at random points of every stage and resumes.

Each *round* starts a suite from an empty state folder and kills its run once per stage, in order
(validate, generate, metrics, judge, report, track): a run is started, the harness waits until the
target stage announces itself (``[<stage>] started`` on stderr), sleeps a random part of that
stage's duration in an uninterrupted reference run, and sends SIGKILL to the run's whole process
group. The next start resumes from what the killed ones left; after the last kill the run is let
finish. Then the harness checks what a crash must never cause:

* **scores** of the final run equal the uninterrupted reference run's, row for row;
* **records lost / duplicated**: every (system, instance, track, judge, criterion) row of the
  reference is in the final table exactly once;
* **duplicate judge calls**: a judge request answered by a run whose response cache already held
  that request's committed answer (the scripted judge below writes each request's digest into its
  answer and into a call log, so both sides can be read back);
* **nothing half-written**: after every kill each final-named ``.json``/``.parquet`` file under the
  state and run folders parses, and every run folder left behind is complete or removed by the
  next run.

The judge is :func:`judge`, a deterministic scripted model (``kind: scripted``) with a delay, so the
judge stage lasts long enough to be hit; the metrics are the suite's real ones.
``make test`` runs one round (6 kills, tests/test_chaos.py); ``python -m bench kill`` runs four
(24 kills).

The harness is not part of the library: it lives with the benchmarks, and the tests import it as
``bench.chaos`` (the repository root is on pytest's path). The runs it starts find its judge
(``bench.chaos:judge``) because it puts the repository root on their ``PYTHONPATH``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STAGES = ("validate", "generate", "metrics", "judge", "report", "track")
CALL_LOG_ENV = "OMNIEVAL_CHAOS_CALL_LOG"
DELAY_ENV = "OMNIEVAL_CHAOS_JUDGE_DELAY_S"
#: The repository root: the folder that holds the ``bench`` package, so ``bench.chaos`` imports.
REPO_ROOT = Path(__file__).resolve().parents[1]
_MARKER = re.compile(r"^\[(validate|generate|metrics|judge|report|track)\] started")
_DIGEST = re.compile(r"call ([0-9a-f]{12})")


def request_digest(request: Any) -> str:
    """12 hex digits naming a chat request by its messages (the harness's record of a call)."""
    text = "\x1e".join(f"{m.role}\x1f{m.text}" for m in request.messages)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def judge(request: Any) -> str:
    """A deterministic scripted judge: scores from the request's digest, the digest in each rationale.

    Appends ``<digest>\\t<pid>`` to the file named by ``$OMNIEVAL_CHAOS_CALL_LOG`` when the call
    starts and sleeps ``$OMNIEVAL_CHAOS_JUDGE_DELAY_S`` seconds before answering.
    """
    from omnieval.judges import TRACKS

    digest = request_digest(request)
    log = os.environ.get(CALL_LOG_ENV)
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{digest}\t{os.getpid()}\n".encode())
        finally:
            os.close(fd)
    time.sleep(float(os.environ.get(DELAY_ENV, "0") or 0))
    track = "speech" if "<candidate_speech_analysis>" in request.messages[-1].text else "text"
    seed = int(digest, 16)
    return json.dumps(
        {
            criterion: {"score": 1 + (seed >> (4 * i)) % 10, "rationale": f"call {digest}"}
            for i, criterion in enumerate(TRACKS[track].criteria)
        }
    )


# -- the harness ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kill:
    """One SIGKILL: the stage aimed at, the stage the run was in, seconds after the stage began."""

    round: int
    target: str
    landed: str
    after_s: float


@dataclass
class ChaosReport:
    """What the harness measured (see the module docstring for each check)."""

    kills: list[Kill] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    """Targets whose run finished before the kill came (not counted as kills)."""
    rounds: int = 0
    reference_rows: int = 0
    records_lost: int = 0
    duplicate_rows: int = 0
    judge_calls: int = 0
    duplicate_calls: int = 0
    in_flight_redone: int = 0
    """Calls repeated because a kill hit them before their answer was committed (allowed)."""
    scores_identical: bool = True
    score_mismatches: list[str] = field(default_factory=list)
    half_written: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def kills_per_stage(self) -> dict[str, int]:
        counts = dict.fromkeys(STAGES, 0)
        for kill in self.kills:
            counts[kill.landed] = counts.get(kill.landed, 0) + 1
        return counts

    @property
    def kills_expected(self) -> int:
        """One kill per stage per round."""
        return self.rounds * len(STAGES)

    @property
    def all_kills_landed(self) -> bool:
        """Every aimed kill hit a running process inside the stage it was aimed at.

        A kill that came after the run finished, or after the run had left the target stage,
        tested nothing about that stage, so the harness does not count it as a pass.
        """
        return (
            self.rounds > 0
            and not self.missed
            and len(self.kills) == self.kills_expected
            and all(kill.landed == kill.target for kill in self.kills)
        )

    @property
    def ok(self) -> bool:
        return (
            self.all_kills_landed
            and self.reference_rows > 0
            and self.records_lost == 0
            and self.duplicate_rows == 0
            and self.duplicate_calls == 0
            and self.scores_identical
            and not self.half_written
        )

    def lines(self) -> list[str]:
        per_stage = ", ".join(f"{stage} {n}" for stage, n in self.kills_per_stage.items())
        return [
            f"kill -9 harness: {len(self.kills)} kills over {self.rounds} round(s) ({per_stage}); "
            f"{len(self.missed)} aimed kill(s) came after the run finished, "
            f"{sum(k.landed != k.target for k in self.kills)} landed in a later stage than aimed",
            f"records lost = {self.records_lost}, duplicates = {self.duplicate_rows} "
            f"(of {self.reference_rows} score rows of the uninterrupted run)",
            f"judge calls {self.judge_calls}: duplicate calls for committed records = {self.duplicate_calls}, "
            f"in-flight calls redone after a kill = {self.in_flight_redone}",
            f"final scores identical to the uninterrupted run: {self.scores_identical}; "
            f"half-written files = {len(self.half_written)}",
        ]


def _panel_yaml(delay_note: str) -> str:
    judge_block = (
        "id: chaos-judge\n"
        "        model: scripted/chaos\n"
        '        backend: {kind: scripted, script: "bench.chaos:judge"}\n'
        "        decoding: {temperature: 0.0, max_tokens: 256}\n"
        "        framing: {schema_constrained: true}\n"
        "        retries: 0\n"
        "        batch_size: 1\n"
    )
    return (
        f"# kill -9 harness panel ({delay_note})\n"
        "name: chaos\n"
        "tracks:\n"
        f"  text:\n    judges:\n      - {judge_block}"
        f"  speech:\n    input: cascade\n    judges:\n      - {judge_block}"
        "  image:\n    unavailable: the harness judges text and speech only\n"
    )


def write_suite(folder: Path, name: str, *, limit: int, dataset: Path) -> Path:
    """A storybench suite on the sample's first ``limit`` transitions with the harness's judge."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    panel = folder / "chaos-panel.yaml"
    panel.write_text(_panel_yaml("scripted judge, digest in every answer"), encoding="utf-8")
    suite = {
        "suite": name,
        "benchmark": "storybench",
        "dataset": {"name": "storybench-sample", "path": str(dataset), "limit": limit},
        "systems": {"oracle": {"kind": "oracle"}, "shuffled": {"kind": "shuffled", "seed": 0}},
        # No ASR: the harness checks the platform's bookkeeping under kills, not speech metrics, and
        # loading Whisper in every restarted run was most of a short run's metrics stage.
        "metrics": {"asr_model": None},
        "judges": {"panels": [str(panel)]},
        "analyses": {"enabled": True, "seed": 0, "bootstrap_draws": 200},
        "tracking": {"experiment": f"omnieval/{name}"},
        "state_dir": str(folder / "state"),
        "runs_dir": str(folder / "runs"),
        "regression": {"bootstrap_draws": 200},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


@dataclass
class _Run:
    process: subprocess.Popen[str]
    markers: list[tuple[float, str]]
    output: list[str]
    started: float
    reader: threading.Thread


def _with_repo_on_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the repository root first on ``PYTHONPATH``, so a run started from any folder
    (and every worker it starts) can import the harness's judge ``bench.chaos:judge``."""
    inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**env, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *inherited])}


def _start(suite: Path, env: dict[str, str]) -> _Run:
    process = subprocess.Popen(
        [sys.executable, "-m", "omnieval", "run", str(suite)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_with_repo_on_path(env),
        start_new_session=True,  # its own process group: the kill takes every child with it
    )
    markers: list[tuple[float, str]] = []
    output: list[str] = []
    started = time.monotonic()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            match = _MARKER.match(line)
            if match:
                markers.append((time.monotonic() - started, match.group(1)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return _Run(process, markers, output, started, reader)


def _finish(run: _Run, timeout_s: float) -> int:
    try:
        code = run.process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(run.process.pid, signal.SIGKILL)
        code = run.process.wait()
    run.reader.join(timeout=10)
    return code


def _stage_durations(markers: list[tuple[float, str]], total_s: float) -> dict[str, float]:
    """Seconds from each stage's first marker to the next stage's first marker."""
    firsts: dict[str, float] = {}
    for at, stage in markers:
        firsts.setdefault(stage, at)
    ordered = [s for s in STAGES if s in firsts]
    out: dict[str, float] = {}
    for i, stage in enumerate(ordered):
        end = firsts[ordered[i + 1]] if i + 1 < len(ordered) else total_s
        out[stage] = max(0.05, end - firsts[stage])
    return out


def _committed(cache: Path) -> set[str]:
    """Digests whose answers are committed to the response cache (complete entries only)."""
    found: set[str] = set()
    for entry in (cache / "judges" / "responses").glob("*/*.json"):
        try:
            data = json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        match = _DIGEST.search(str((data.get("completion") or {}).get("text", "")))
        if match:
            found.add(match.group(1))
    return found


def _calls(log: Path) -> list[str]:
    """Request digests of every judge call so far, in call order."""
    if not log.is_file():
        return []
    return [line.partition("\t")[0] for line in log.read_text(encoding="utf-8").splitlines() if line]


def half_written(*folders: Path) -> list[str]:
    """Final-named JSON/parquet files that do not parse (temporary ``.tmp`` files are not final)."""
    import pyarrow.parquet as pq

    bad: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in folder.rglob("*"):
            if not path.is_file():
                continue
            parents = path.relative_to(folder).parts[:-1]
            if any(part.startswith(".") and part != ".stamps" for part in parents):
                continue  # a shard being built (.<key>-xxxx/): renamed into place only when whole
            try:
                if path.suffix == ".json":
                    json.loads(path.read_text(encoding="utf-8"))
                elif path.suffix == ".parquet":
                    pq.read_metadata(path)
            except Exception as exc:
                bad.append(f"{path}: {type(exc).__name__}")
    return bad


def _scores(run_folder: Path) -> Any:
    import pandas as pd

    frame = pd.read_parquet(run_folder / "scores.parquet")
    keys = [c for c in frame.columns if c != "value"]
    return frame.sort_values(keys, kind="stable").reset_index(drop=True), keys


def _compare(reference: Path, final: Path, report: ChaosReport) -> None:
    import numpy as np

    ref, keys = _scores(reference)
    got, _ = _scores(final)
    report.reference_rows = len(ref)
    ref_keys = {tuple(map(str, row)) for row in ref[keys].itertuples(index=False)}
    got_list = [tuple(map(str, row)) for row in got[keys].itertuples(index=False)]
    report.records_lost = len(ref_keys - set(got_list))
    report.duplicate_rows = len(got_list) - len(set(got_list))
    if len(ref) != len(got) or report.records_lost:
        report.scores_identical = False
        report.score_mismatches.append(f"{len(ref)} reference rows, {len(got)} final rows")
        return
    a = ref["value"].to_numpy(dtype=float)
    b = got["value"].to_numpy(dtype=float)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    for i in np.nonzero(~same)[0][:10]:
        report.score_mismatches.append(f"{dict(zip(keys, ref.loc[i, keys], strict=True))}: {a[i]} vs {b[i]}")
    report.scores_identical = bool(same.all()) and list(ref["status"]) == list(got["status"])


def _run_folder(folder: Path) -> Path:
    tracking = json.loads((folder / "state" / "tracking.json").read_text(encoding="utf-8"))
    return Path(tracking["run_folder"])


def run_harness(
    workdir: Path,
    *,
    rounds: int = 1,
    seed: int = 0,
    limit: int = 3,
    judge_delay_s: float = 0.25,
    dataset: Path = Path("data/storybench-sample"),
    run_timeout_s: float = 900.0,
    echo: Callable[[str], None] = print,
) -> ChaosReport:
    """Kill ``omnieval run`` once per stage for ``rounds`` rounds; return what was measured."""
    from omnieval.flows._dask import shared_prefect_api

    started = time.monotonic()
    rng = random.Random(seed)
    report = ChaosReport(rounds=rounds)
    workdir = Path(workdir).resolve()
    dataset = Path(dataset).resolve()
    base_env = {**os.environ, DELAY_ENV: str(judge_delay_s), "PREFECT_LOGGING_LEVEL": "ERROR"}
    with shared_prefect_api():
        base_env["PREFECT_API_URL"] = os.environ["PREFECT_API_URL"]

        def env_for(folder: Path, log: Path) -> dict[str, str]:
            return {
                **base_env,
                CALL_LOG_ENV: str(log),
                "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}",
                "OMNIEVAL_MLFLOW_ARTIFACTS": str(folder / "artifacts"),
            }

        ref_dir = workdir / "reference"
        shutil.rmtree(ref_dir, ignore_errors=True)
        ref_suite = write_suite(ref_dir, "chaos-ref", limit=limit, dataset=dataset)
        run = _start(ref_suite, env_for(ref_dir, ref_dir / "calls.log"))
        code = _finish(run, run_timeout_s)
        if code != 0:
            raise RuntimeError(
                f"the uninterrupted reference run failed (exit {code}):\n{''.join(run.output[-30:])}"
            )
        durations = _stage_durations(run.markers, time.monotonic() - run.started)
        echo("reference run: " + ", ".join(f"{s} {d:.1f} s" for s, d in durations.items()))
        reference_folder = _run_folder(ref_dir)

        for number in range(rounds):
            folder = workdir / f"round-{number}"
            shutil.rmtree(folder, ignore_errors=True)
            suite = write_suite(folder, "chaos", limit=limit, dataset=dataset)
            log = folder / "calls.log"
            for target in STAGES:
                committed = _committed(folder / ".cache")
                before = len(_calls(log))
                run = _start(suite, env_for(folder, log))
                landed = _kill_in(run, target, durations.get(target, 1.0), rng, run_timeout_s)
                if landed is None:
                    report.missed.append(f"round {number}: {target}")
                else:
                    report.kills.append(Kill(number, target, landed[0], round(landed[1], 2)))
                    report.half_written += half_written(folder / "state", folder / "runs")
                made = _calls(log)[before:]
                report.judge_calls += len(made)
                report.duplicate_calls += sum(1 for d in made if d in committed)
                echo(
                    f"round {number}: aimed at {target}, "
                    + (f"killed in {landed[0]}" if landed else "finished first")
                )
            committed = _committed(folder / ".cache")
            before = len(_calls(log))
            run = _start(suite, env_for(folder, log))
            code = _finish(run, run_timeout_s)
            if code != 0:
                raise RuntimeError(
                    f"round {number}: the resumed run failed (exit {code}):\n{''.join(run.output[-30:])}"
                )
            made = _calls(log)[before:]
            report.judge_calls += len(made)
            report.duplicate_calls += sum(1 for d in made if d in committed)
            calls = _calls(log)
            # Every repeated request of this round: committed duplicates (counted above) or calls
            # a kill interrupted before their answers were committed.
            report.in_flight_redone += len(calls) - len(set(calls))
            report.half_written += half_written(folder / "state", folder / "runs")
            leftovers = [
                p for p in (folder / "runs" / "chaos").iterdir() if not (p / "mlflow.json").is_file()
            ]
            report.half_written += [f"{p}: run folder without mlflow.json" for p in leftovers]
            _compare(reference_folder, _run_folder(folder), report)
    report.in_flight_redone -= report.duplicate_calls
    report.seconds = time.monotonic() - started
    return report


def _kill_in(
    run: _Run, target: str, duration_s: float, rng: random.Random, timeout_s: float
) -> tuple[str, float] | None:
    """Wait for ``target`` to start, SIGKILL the run's process group at a random point of it.

    Returns (stage the run was in, seconds after the target began), or None if it finished first.
    """
    deadline = time.monotonic() + timeout_s
    begun: float | None = None
    while time.monotonic() < deadline:
        if run.process.poll() is not None:
            _finish(run, 5)
            return None
        if begun is None and any(stage == target for _, stage in run.markers):
            begun = time.monotonic()
            wait = rng.uniform(0.0, 0.35 * duration_s)
        if begun is not None and time.monotonic() - begun >= wait:
            os.killpg(run.process.pid, signal.SIGKILL)
            run.process.wait()
            run.reader.join(timeout=10)
            landed = run.markers[-1][1] if run.markers else "validate"
            return landed, time.monotonic() - begun
        time.sleep(0.02)
    os.killpg(run.process.pid, signal.SIGKILL)
    run.process.wait()
    return None
