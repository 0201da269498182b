"""Commands as a new user runs them: the installed ``omnieval`` console script in a new process.

In-process tests share one interpreter in which some test already imported ``omnieval.benchmarks``,
so every registry the benchmarks fill on import is full there; a fresh shell starts with none of
them (``omnieval analyze --list`` printed nothing, a table's analyses were "0 analyses", exit 0).
Here each command runs as its own process, and each case checks the exit code, the message and
that the command did its job. The processes are independent, so they run a few at a time: each
pays the benchmarks' import (seconds), and one after another they would take minutes.
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from omnieval.scores import coerce_scores, write_scores
from omnieval_testkit.storybench_synthetic import make_scores

OMNIEVAL = str(Path(sys.executable).parent / "omnieval")
ROOT = Path(__file__).resolve().parents[2]
ACBENCH_SAMPLE = ROOT / "data" / "acbench-sample"
PRISM_SAMPLE = ROOT / "data" / "prism-sample"


@dataclass(frozen=True)
class Case:
    """One command line and what it did."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def failed_with(self, code: int, *needles: str) -> None:
        """Exit ``code`` with a short message holding every needle, and no traceback."""
        assert self.code == code, (self.args, self.code, self.err[-2000:])
        assert "Traceback" not in self.err, self.err[-2000:]
        for needle in needles:
            assert needle in self.err, (needle, self.err[-2000:])

    def succeeded(self) -> None:
        assert self.code == 0, (self.args, self.err[-2000:])
        assert "Traceback" not in self.err, self.err[-2000:]


def _run(args: Sequence[object], cwd: Path) -> Case:
    argv = tuple(str(a) for a in args)
    done = subprocess.run([OMNIEVAL, *argv], capture_output=True, text=True, cwd=cwd, timeout=600)
    return Case(argv, done.returncode, done.stdout, done.stderr)


_HELPS_SCRIPT = """
import contextlib, io, json, sys
from omnieval.cli import main
out = {}
for argv in json.loads(sys.argv[1]):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(argv)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    out[" ".join(argv)] = [code, stdout.getvalue(), stderr.getvalue()]
print(json.dumps(out))
"""


def _helps_in_one_process(commands: Sequence[tuple[str, ...]], cwd: Path) -> dict[str, Case]:
    """``omnieval <command> --help`` for every command, in one fresh interpreter (not one process
    each: 48 interpreters importing the CLI cost more than the rest of this module). Every command
    still runs as a console script elsewhere in this module or in test_commands_fresh_shell.py."""
    argvs = [[*c, "--help"] for c in commands]
    done = subprocess.run(
        [sys.executable, "-c", _HELPS_SCRIPT, json.dumps(argvs)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    return {f"help {' '.join(c)}": Case((*c, "--help"), *results[" ".join([*c, "--help"])]) for c in commands}


# -- inputs ------------------------------------------------------------------------------------------


def _story_table() -> pd.DataFrame:
    """3 systems x 6 transitions: BERTScore, speech metadata and one text judge, every row valid."""
    return make_scores(
        benchmark="storybench",
        n_systems=3,
        n_instances=6,
        n_judges=1,
        missing_rate=0.0,
        invalid_rate=0.0,
        repaired_rate=0.0,
        not_applicable_tracks=("image", "speech", "integrated"),
        narration_length=False,
        seed=3,
    )


PRISM_SYSTEMS = {"a": [6.0, 7.0, 9.0], "b": [4.0, 4.0, 6.0]}
"""Per system, its score on off-screen items 0-2 (the same in each of the three speech cells)."""
PRISM_GT = {"a": [8.0, 8.0, 9.0], "b": [8.0, 9.0, 8.0]}
"""The ground truth's scores beside each system."""
PRISM_CELLS = ("audio_quality", "expressiveness", "prompt_following")  # off-screen speech: no AV coherence


def _prism_table() -> pd.DataFrame:
    rows = []
    for k in range(3):
        for system in PRISM_SYSTEMS:
            for dimension in PRISM_CELLS:
                for who, paired, value in (
                    (system, "ground_truth", PRISM_SYSTEMS[system][k]),
                    ("ground_truth", system, PRISM_GT[system][k]),
                ):
                    rows.append(
                        dict(
                            benchmark="prism",
                            system=who,
                            instance_id=f"off/{k}",
                            index=k,
                            track=dimension,
                            component="judge",
                            judge="j",
                            criterion="speech",
                            value=value,
                            status="ok",
                            panel="p",
                            condition="",
                            subset="off_screen",
                            paired_with=paired,
                        )
                    )
    return coerce_scores(pd.DataFrame(rows))


ACBENCH_WER = [0.1, 0.3]
"""System m's per-item WER under the original condition."""


def _acbench_table() -> pd.DataFrame:
    def row(iid: str, index: int, component: str, value: float) -> dict[str, Any]:
        return dict(
            benchmark="acbench",
            system="m",
            instance_id=iid,
            index=index,
            track="emotion",
            component=component,
            judge="",
            criterion="joy",
            value=value,
            status="ok",
            panel="",
            condition="original",
            subset="",
            paired_with="",
        )

    rows = [row(f"e{k}", k, "wer", wer) for k, wer in enumerate(ACBENCH_WER)]
    rows += [row(f"e{k}", k, "attribute_accuracy", float(k % 2)) for k in range(len(ACBENCH_WER))]
    return coerce_scores(pd.DataFrame(rows))


CAPABILITIES = [
    {"system": "m", "setting": "script_only", "instance_id": "i1", "wer": 0.2},
    {"system": "m", "setting": "visual_cue", "instance_id": "i1", "answer": "fast", "choice": "Fast"},
    {"system": "m", "setting": "visual_cue", "instance_id": "i2", "answer": "slow", "choice": "fast"},
    {"system": "m", "setting": "visual_cue", "instance_id": "i3", "answer": "joy", "choice": "joy"},
]


def _run_folder(folder: Path, run_id: str, scores: pd.DataFrame, *, finished: bool, mtime: float) -> Path:
    """A run folder (FORMATS.md section 4); an unfinished one lacks mlflow.json, the last file written."""
    import os

    folder.mkdir(parents=True)
    lineage = {
        "run_id": run_id,
        "suite": "demo",
        "dataset": {"name": "demo", "path": "data/demo", "version": "v1", "dvc_md5": "m", "git_rev": "g"},
        "code": {"git_sha": "g", "git_dirty": False, "package_digest": "p" * 64},
        "systems": {},
        "metrics": {},
        "judges": {},
        "seeds": {},
    }
    (folder / "lineage.json").write_text(json.dumps(lineage), encoding="utf-8")
    write_scores(scores, folder / "scores.parquet")
    (folder / "leaderboard.json").write_text("{}", encoding="utf-8")
    if finished:
        (folder / "mlflow.json").write_text(json.dumps({"parent": run_id, "systems": {}, "analyses": {}}))
    os.utime(folder / "lineage.json", (mtime, mtime))
    return folder


# -- every case, run once, a few processes at a time -------------------------------------------------


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fresh")


@pytest.fixture(scope="module")
def busy_port() -> Iterator[int]:
    """A port another program (this socket) listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def _help_commands() -> list[tuple[str, ...]]:
    """Every subcommand and sub-subcommand the CLI offers (``metrics acbench`` included)."""
    import argparse

    from omnieval.cli import build_parser

    def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    commands: list[tuple[str, ...]] = []
    for name, parser in subcommands(build_parser()).items():
        commands.append((name,))
        commands += [(name, sub) for sub in subcommands(parser)]
    return [*commands, ("train", "probe")]


@pytest.fixture(scope="module")
def fresh(tmp: Path, busy_port: int) -> dict[str, Case]:
    write_scores(_story_table(), tmp / "story.parquet")
    write_scores(_prism_table(), tmp / "prism.parquet")
    write_scores(_acbench_table(), tmp / "acbench.parquet")
    (tmp / "capabilities.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CAPABILITIES))
    (tmp / "answer.txt").write_text(
        json.dumps(
            {
                "candidate_1": {"av_coherence": {"speech": {"score": 7, "evidence": "lips match"}}},
                "candidate_2": {"av_coherence": {"speech": {"score": "2/10", "evidence": "offset"}}},
            }
        )
    )
    # Every clip of the prism sample but the first row's.
    clips = tmp / "clips"
    rows = PRISM_SAMPLE.joinpath("manifest.jsonl").read_text(encoding="utf-8").splitlines()
    for index in range(1, len(rows)):
        clip = clips / "video" / str(index) / "generated.mp4"
        clip.parent.mkdir(parents=True)
        clip.touch()
    runs = tmp / "runs"
    story = _story_table()
    _run_folder(runs / "demo" / "done", "done", story, finished=True, mtime=1_700_000_000)
    _run_folder(runs / "demo" / "killed", "killed", story, finished=False, mtime=1_700_000_100)
    (tmp / "not-a-run").mkdir()
    (tmp / "viewed").mkdir()
    (tmp / "viewed" / "instances.html").write_text("<html></html>")
    (tmp / "a-file").write_text("not a folder")

    cases: dict[str, tuple[object, ...]] = {
        "analyze list": ("analyze", "--list"),
        "analyze storybench": (
            *("analyze", tmp / "story.parquet", "--out", tmp / "story"),
            *("--only", "bootstrap", "--draws", "200"),
        ),
        "analyze prism": ("analyze", tmp / "prism.parquet", "--out", tmp / "prism"),
        "analyze acbench": (
            *("analyze", tmp / "acbench.parquet", "--out", tmp / "acbench"),
            *("--capabilities", tmp / "capabilities.jsonl"),
        ),
        "metrics acbench missing": ("metrics", "acbench", ACBENCH_SAMPLE, tmp / "no" / "such"),
        "view bad port": ("view", tmp / "viewed", "--port", "99999"),
        "view busy port": ("view", tmp / "viewed", "--port", str(busy_port)),
        "lineage latest": ("lineage", "latest", "--runs-dir", runs),
        "compare latest": ("compare", "latest", runs / "demo" / "done", "--runs-dir", runs, "--json"),
        "judge panels": ("judge", "panels", "--json"),
        "judge parse prism": ("judge", "parse", "--track", "av_coherence", tmp / "answer.txt", "--json"),
        "human-tasks missing clip": (
            *("human-tasks", "prism", PRISM_SAMPLE, "--system", "sut"),
            *("--candidates", f"sut={clips}", "--out", tmp / "tasks.json"),
        ),
        "lineage not a run": ("lineage", tmp / "not-a-run", "--runs-dir", runs),
        "make-sample onto a file": ("make-sample", "acbench", tmp / "a-file"),
    }
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(_run, args, tmp) for name, args in cases.items()}
        helps = pool.submit(_helps_in_one_process, _help_commands(), tmp)
        return {**{name: future.result() for name, future in futures.items()}, **helps.result()}


# -- 1. analyses register in a fresh shell -----------------------------------------------------------


def test_analyze_list_names_every_benchmarks_analyses(fresh: dict[str, Case]) -> None:
    done = fresh["analyze list"]
    done.succeeded()
    listed = {line.split()[0]: line for line in done.out.splitlines() if line.strip()}
    assert {"bootstrap", "stability", "capability_diagnostics", "human_validation"} <= set(listed)
    assert "[storybench]" in listed["bootstrap"] and "[prism]" in listed["stability"]
    assert "[acbench]" in listed["capability_diagnostics"]


def test_analyze_a_storybench_table(fresh: dict[str, Case], tmp: Path) -> None:
    # --only keeps this case short (storybench has 15 analyses); the default selection runs for the
    # prism and acbench tables below.
    fresh["analyze storybench"].succeeded()
    assert "wrote 1 analyses (1 ran, 0 skipped)" in fresh["analyze storybench"].out
    boot = json.loads((tmp / "story" / "bootstrap.json").read_text())
    assert boot["status"] == "ok"
    # By hand: the Total Average is the mean of the computed components, automatic metrics x 10
    # (here BERTScore and speech metadata, every field valued) and the text judge's mean criterion.
    # The table as the command read it: write_scores rounds each component (omnieval.scores.PRECISION).
    table = pd.read_parquet(tmp / "story.parquet")
    for system, rows in table[table["status"] == "ok"].groupby("system"):
        bert = statistics.fmean(rows.loc[rows["component"] == "bertscore_f1", "value"])
        speech = statistics.fmean(rows.loc[rows["component"] == "speech_meta", "value"])
        judge = statistics.fmean(
            rows.loc[(rows["component"] == "judge") & (rows["track"] == "text"), "value"]
        )
        expected = (10 * bert + 10 * speech + judge) / 3
        assert boot["systems"][system]["total_average"] == pytest.approx(expected, abs=1e-9)


def test_analyze_a_prism_table(fresh: dict[str, Case], tmp: Path) -> None:
    fresh["analyze prism"].succeeded()
    assert "wrote 3 analyses" in fresh["analyze prism"].out  # stability, judge_ablation, human_preference
    doc = json.loads((tmp / "prism" / "stability.json").read_text())
    assert doc["status"] == "ok"
    # By hand: an item's total is the sum of its three cells; d_signal is the difference of the two
    # systems' mean totals over the pooled sample SD of their totals.
    a = [3 * v for v in PRISM_SYSTEMS["a"]]
    b = [3 * v for v in PRISM_SYSTEMS["b"]]
    pooled = ((2 * statistics.variance(a) + 2 * statistics.variance(b)) / 4) ** 0.5
    [pair] = doc["pairs"]
    assert (pair["system_a"], pair["system_b"]) == ("a", "b")
    assert pair["d_signal"] == pytest.approx((statistics.fmean(a) - statistics.fmean(b)) / pooled)
    assert pair["d_bias"] == pytest.approx(0.0)  # the ground truth's mean total is 25 beside both


def test_analyze_an_acbench_table(fresh: dict[str, Case], tmp: Path) -> None:
    fresh["analyze acbench"].succeeded()
    assert "wrote 2 analyses (1 ran, 1 skipped)" in fresh["analyze acbench"].out
    table3 = json.loads((tmp / "acbench" / "capability_diagnostics.json").read_text())
    assert table3["status"] == "ok"
    m = table3["systems"]["m"]
    # By hand: the full task's WER is the mean per-item WER in percent; 2 of 3 visual cues match.
    assert m["task_wer_original"] == pytest.approx(100 * statistics.fmean(ACBENCH_WER))
    assert m["visual_cue"]["accuracy"] == pytest.approx(100 * 2 / 3)
    assert m["script_only"] == {"wer": pytest.approx(20.0), "n": 1}
    skipped = json.loads((tmp / "acbench" / "human_validation.json").read_text())
    assert skipped["status"] == "skipped" and "--humans" in skipped["reason"]


# -- 2. a missing candidates folder ------------------------------------------------------------------


def test_metrics_acbench_refuses_a_missing_candidates_folder(fresh: dict[str, Case], tmp: Path) -> None:
    done = fresh["metrics acbench missing"]
    done.failed_with(2, f"candidates folder {tmp / 'no' / 'such'} does not exist")
    assert done.out == ""  # nothing scored


# -- 3. view's port ----------------------------------------------------------------------------------


def test_view_checks_the_port(fresh: dict[str, Case], busy_port: int) -> None:
    fresh["view bad port"].failed_with(2, "invalid port 99999: expected 1-65535")
    fresh["view busy port"].failed_with(2, f"cannot listen on 127.0.0.1:{busy_port}", "another --port")
    assert "http://" not in fresh["view busy port"].out


# -- 4. 'latest' is the last successful run for lineage and compare alike ------------------------------


def test_lineage_and_compare_agree_on_latest(fresh: dict[str, Case], tmp: Path) -> None:
    lineage = fresh["lineage latest"]
    lineage.succeeded()
    # "killed" is newer but never finished (no mlflow.json): latest is "done".
    assert lineage.out.startswith(f"run done  ({tmp / 'runs' / 'demo' / 'done'})")
    compare = fresh["compare latest"]
    compare.succeeded()
    document = json.loads(compare.out)
    assert document["run_a"]["run_id"] == document["run_b"]["run_id"] == "done"


# -- 5. every benchmark's judge panels and tracks ----------------------------------------------------


def test_judge_panels_lists_every_benchmarks_panels(fresh: dict[str, Case]) -> None:
    fresh["judge panels"].succeeded()
    panels = {(p["benchmark"], p["name"]): p for p in json.loads(fresh["judge panels"].out)}
    assert {
        ("prism", "cpu-cascade"),
        ("prism", "paper"),
        ("storybench", "cpu"),
        ("storybench", "paper"),
    } <= set(panels)
    cascade = panels[("prism", "cpu-cascade")]
    assert set(cascade["tracks"]) == {"av_coherence", "audio_quality", "expressiveness", "prompt_following"}
    assert cascade["tracks"]["audio_quality"]["judges"][0]["id"] == "cpu-qwen2.5-coder-1.5b"


def test_judge_parse_reads_a_prism_track(fresh: dict[str, Case]) -> None:
    fresh["judge parse prism"].succeeded()
    reading = json.loads(fresh["judge parse prism"].out)
    assert reading["status"] == "ok"
    assert reading["scores"] == {"candidate_1.av_coherence.speech": 7, "candidate_2.av_coherence.speech": 2}
    assert "av_coherence" in fresh["help judge parse"].out


# -- 6. human-study tasks link only clips that exist -------------------------------------------------


def test_human_tasks_refuse_a_missing_clip(fresh: dict[str, Case], tmp: Path) -> None:
    first = json.loads(PRISM_SAMPLE.joinpath("manifest.jsonl").read_text(encoding="utf-8").splitlines()[0])
    expected = tmp / "clips" / "video" / "0" / "generated.mp4"
    fresh["human-tasks missing clip"].failed_with(
        2,
        "1 linked candidate clip(s) do not exist",
        f"system sut, instance {first['id']} (row 0): no clip at {expected}",
    )
    assert not (tmp / "tasks.json").exists()


# -- 7. lineage of a folder that is not a run ---------------------------------------------------------


def test_lineage_of_a_folder_that_is_not_a_run_is_exit_2(fresh: dict[str, Case], tmp: Path) -> None:
    fresh["lineage not a run"].failed_with(
        2, f"{tmp / 'not-a-run'} is not a run folder: it has no lineage.json"
    )


# -- 8. and the sweep: every --help, one bad output path ---------------------------------------------


def test_every_help_prints_without_a_literal_double_percent(fresh: dict[str, Case]) -> None:
    helps = {name: case for name, case in fresh.items() if name.startswith("help ")}
    assert {"help compare", "help judge panels", "help metrics acbench", "help train probe"} <= set(helps)
    for case in helps.values():
        case.succeeded()
        assert "usage:" in case.out, case.args
        assert "%%" not in case.out, case.args
    assert "95% CI" in " ".join(fresh["help compare"].out.split())


@pytest.mark.parametrize(
    "argv",
    [
        ["make-sample", "acbench"],
        ["make-sample", "prism"],
        ["make-sample", "storybench"],
        ["human-tasks", "prism"],
    ],
)
def test_benchmark_commands_help_without_a_literal_double_percent(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # The benchmark's own parser, handed the rest of the command line: formatting its help needs no
    # fresh shell, and each of these would pay the benchmarks' import again.
    from omnieval.cli import main

    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: omnieval {' '.join(argv)}") and "%%" not in out


def test_make_sample_onto_a_file_is_exit_2(fresh: dict[str, Case], tmp: Path) -> None:
    fresh["make-sample onto a file"].failed_with(2, f"{tmp / 'a-file'} exists and is not a folder")
    assert (tmp / "a-file").read_text() == "not a folder"
