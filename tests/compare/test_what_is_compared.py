"""``omnieval compare`` says what it compares: never a run with itself as a GO, the older run as the
baseline (``--baseline`` otherwise), both run ids named, run-id prefixes as ``lineage`` takes them,
an MDE only where the power computation is defined, and the scale of every component."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from omnieval.benchmarks import get_benchmark
from omnieval.cli import main
from omnieval.compare import (
    INCONCLUSIVE,
    MDE_MIN_PAIRED,
    compare_runs,
    find_run_by_id,
    order_runs,
    read_run,
    resolve_run,
    verdict_lines,
)
from omnieval.config import RegressionConfig
from omnieval.errors import DataError

from .conftest import noisy_scores, storybench_scores

CONFIG = RegressionConfig(bootstrap_draws=500, seed=0)
OMNIEVAL = str(Path(sys.executable).with_name("omnieval"))


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- the same run on both sides ---------------------------------------------------------------------


def test_a_run_compared_with_itself_is_inconclusive_never_go(
    make_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = make_run("aaaa0001")
    make_run("bbbb0002")
    runs = str(tmp_path / "runs")
    code, out, _ = _cli(["compare", "latest", "latest", "--runs-dir", runs, "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == INCONCLUSIVE
    assert doc["reasons"][0].startswith("run A and run B are the same run (bbbb0002,")
    assert "measures nothing" in doc["reasons"][0] and not any(r.startswith("GO") for r in doc["reasons"])
    # the same run under two names (its folder and its id) is still the same run
    doc = compare_runs(read_run(folder), read_run(resolve_run("aaaa", runs_dir=tmp_path / "runs")), CONFIG)
    assert doc["verdict"] == INCONCLUSIVE and "same run (aaaa0001" in doc["reasons"][0]


def test_a_copied_run_folder_is_the_same_run(make_run: Callable[..., Path], tmp_path: Path) -> None:
    import shutil

    folder = make_run("aaaa0001")
    copy = tmp_path / "elsewhere" / "aaaa0001"
    shutil.copytree(folder, copy)
    assert compare_runs(read_run(folder), read_run(copy), CONFIG)["verdict"] == INCONCLUSIVE


# -- which run is the baseline ----------------------------------------------------------------------


def test_the_older_run_is_the_baseline_in_either_order(
    make_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_run("aaaa0001")
    make_run("bbbb0002")
    runs = ["--suite", "demo", "--runs-dir", str(tmp_path / "runs")]
    for order in (["latest", "previous"], ["previous", "latest"], ["bbbb0002", "aaaa0001"]):
        code, out, _ = _cli(["compare", *order, *runs, "--json"], capsys)
        doc = json.loads(out)
        assert code == 0 and doc["verdict"] == "GO", order
        assert (doc["run_a"]["run_id"], doc["run_a"]["role"]) == ("aaaa0001", "baseline"), order
        assert (doc["run_b"]["run_id"], doc["run_b"]["role"]) == ("bbbb0002", "candidate"), order
    assert "RUN_A, named first, is the newer" in doc["baseline_rule"]
    code, out, _ = _cli(["compare", "latest", "previous", *runs], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "verdict: GO"
    assert any(line.startswith("baseline  (A): aaaa0001  ") and "the older run" in line for line in lines)
    assert any(line.startswith("candidate (B): bbbb0002  ") for line in lines)
    # --baseline names the baseline explicitly: RUN_A or RUN_B as given
    code, out, _ = _cli(["compare", "latest", "previous", *runs, "--baseline", "first", "--json"], capsys)
    doc = json.loads(out)
    assert (doc["run_a"]["run_id"], doc["run_b"]["run_id"]) == ("bbbb0002", "aaaa0001")
    assert doc["baseline_rule"] == "RUN_A as given (--baseline first)"
    code, out, _ = _cli(["compare", "latest", "previous", *runs, "--baseline", "second", "--json"], capsys)
    assert json.loads(out)["run_a"]["run_id"] == "aaaa0001"
    with pytest.raises(SystemExit) as info:
        main(["compare", "latest", "previous", *runs, "--baseline", "newest"])
    assert info.value.code == 2 and "--baseline: invalid choice: 'newest'" in capsys.readouterr().err


def test_order_runs_rules(make_run: Callable[..., Path]) -> None:
    old, new = read_run(make_run("r-old")), read_run(make_run("r-new"))
    assert [r.run_id for r in order_runs(new, old)[:2]] == ["r-old", "r-new"]
    assert [r.run_id for r in order_runs(old, new)[:2]] == ["r-old", "r-new"]
    assert [r.run_id for r in order_runs(new, old, "first")[:2]] == ["r-new", "r-old"]
    assert [r.run_id for r in order_runs(old, new, "second")[:2]] == ["r-new", "r-old"]
    with pytest.raises(ValueError, match="baseline must be one of older, first, second"):
        order_runs(old, new, "newer")


# -- run ids and their prefixes ---------------------------------------------------------------------


def test_run_id_prefixes_resolve_as_lineage_takes_them(
    make_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs_dir = tmp_path / "runs"
    first = make_run("nightly-1")
    second = make_run("nightly-12")
    third = make_run("other-3", suite="weekly")
    # any unique start, not only six hex digits; an exact id wins over longer ids it begins
    assert find_run_by_id("oth", runs_dir) == third
    assert find_run_by_id("nightly-1", runs_dir) == first
    assert find_run_by_id("nightly-12", runs_dir) == second
    assert find_run_by_id("zzz", runs_dir) is None and find_run_by_id("../x", runs_dir) is None
    with pytest.raises(DataError) as info:
        find_run_by_id("night", runs_dir)
    message = str(info.value)
    assert "run id prefix 'night' is ambiguous" in message and "it names 2 runs" in message
    assert f"nightly-1 ({first})" in message and f"nightly-12 ({second})" in message
    runs = ["--runs-dir", str(runs_dir)]
    code, out, _ = _cli(["compare", "nightly-1", "oth", *runs, "--json"], capsys)
    assert code == 0 and json.loads(out)["run_b"]["folder"] == str(third)
    code, _, err = _cli(["compare", "night", "oth", *runs], capsys)
    assert code == 2 and "run id prefix 'night' is ambiguous" in err and "nightly-12" in err
    assert "Traceback" not in err
    code, _, err = _cli(["compare", "nope", "oth", *runs], capsys)
    assert code == 2 and "unknown run 'nope'" in err
    a_file = tmp_path / "a-file.txt"
    a_file.write_text("x")
    code, _, err = _cli(["compare", "latest", "previous", "--runs-dir", str(a_file)], capsys)
    assert code == 2 and f"--runs-dir: {a_file} is not a folder" in err


# -- the minimum detectable effect ------------------------------------------------------------------


def test_no_mde_below_the_paired_minimum(
    make_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two instances with identical outputs: the bootstrap SE is 0, an MDE would read "0 at 80 % power".
    a, b = make_run("aaaa0001", storybench_scores(n=2)), make_run("bbbb0002", storybench_scores(n=2))
    doc = compare_runs(read_run(a), read_run(b), CONFIG)
    assert doc["verdict"] == "GO"
    for cells in doc["systems"].values():
        assert cells
        assert all(cell["mde"] is None for cell in cells.values())
    assert doc["tests"]
    assert all(t["mde_note"] == "not computable with n = 2" and t["rules_out"] is None for t in doc["tests"])
    assert not any(r.startswith("GO: no ") for r in doc["reasons"])
    assert any(
        "not computable with n = 2" in r and f"at least {MDE_MIN_PAIRED} paired instances" in r
        for r in doc["reasons"]
    )
    text = "\n".join(verdict_lines(doc))
    assert "mde n/a: not computable with n = 2" in text and "alpha / bertscore_f1" in text
    # at the minimum the MDE is reported, and no note
    before, after = noisy_scores(n=MDE_MIN_PAIRED)
    doc = compare_runs(read_run(make_run("c", before)), read_run(make_run("d", after)), CONFIG)
    assert all(t["mde_note"] is None and t["mde"] is not None for t in doc["tests"])
    assert "mde n/a" not in "\n".join(verdict_lines(doc))


# -- scales -----------------------------------------------------------------------------------------


def test_every_component_names_its_scale(make_run: Callable[..., Path]) -> None:
    doc = compare_runs(read_run(make_run("r1")), read_run(make_run("r2")), CONFIG)
    scales = doc["scales"]
    assert set(scales) == {"bertscore_f1", "judge.text", "total_average"}
    assert scales["bertscore_f1"].startswith("BERTScore F1 x10 (0-10, Total-Average scale")
    assert "aggregate shows the raw 0-1 value" in scales["bertscore_f1"]
    assert "1-10" in scales["judge.text"] and "0-10" in scales["total_average"]
    text = verdict_lines(doc)
    head = text.index("scales (A, B, delta, CI, mde and the movers' values are on these):")
    assert f"  bertscore_f1: {scales['bertscore_f1']}" in text[head:]
    assert f"  judge.text: {scales['judge.text']}" in text[head:]


@pytest.mark.parametrize("name", ["acbench", "prism", "storybench"])
def test_every_shipped_benchmark_declares_the_scale_of_every_headline_component(name: str) -> None:
    bench = get_benchmark(name)
    assert bench.spec is not None
    declared = bench.spec.headline_scales()
    assert set(declared) == set(bench.headline_components), sorted(
        set(bench.headline_components) - set(declared)
    )


# -- as a user runs it ------------------------------------------------------------------------------


def test_console_script_on_two_run_folders(make_run: Callable[..., Path], tmp_path: Path) -> None:
    before, after = noisy_scores()
    make_run("aaaa0001", before)
    make_run("bbbb0002", after)
    runs = str(tmp_path / "runs")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [OMNIEVAL, "compare", *args, "--runs-dir", runs],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=tmp_path,
        )

    done = run("latest", "aaaa")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("verdict: GO")
    assert "baseline  (A): aaaa0001  " in out and "candidate (B): bbbb0002  " in out
    assert "bertscore_f1: BERTScore F1 x10 (0-10, Total-Average scale" in out
    same = run("latest", "latest")
    assert same.returncode == 0 and same.stdout.startswith("verdict: INCONCLUSIVE"), same.stderr
    assert "the same run (bbbb0002" in same.stdout


def test_a_scale_for_a_component_not_listed_is_refused() -> None:
    from pydantic import ValidationError

    from omnieval.benchmarks._spec import BenchmarkSpec

    base = {
        "name": "toy",
        "title": "Toy",
        "dataset": {"marker": "m", "sample": "s"},
        "system_kinds": ["import"],
        "modalities": ["text"],
    }
    headline = {"components": ["f1"], "scales": {"f2": "0-1"}}
    with pytest.raises(ValidationError, match="scales names components not listed: f2"):
        BenchmarkSpec.model_validate({**base, "headline": headline})
    spec = BenchmarkSpec.model_validate(
        {**base, "headline": {"components": ["f1", "f2"], "scales": {"f2": "0-1"}}}
    )
    assert spec.headline_scales() == {"f2": "0-1"}  # f1 undeclared: compare says so
