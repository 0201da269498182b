"""Cost by stage (``usage.json``'s ``by_system``, ``generation``, ``judging``) and the generation budget.

A small storybench run in process: a reference system (``oracle``), an orchestration system whose
scripted planner reports 100 prompt and 20 completion tokens per plan, and a ``command`` system
(a stdlib script that writes the narration only), judged on the text track by a scripted judge that
reports 50 + 10 tokens per verdict. The figures are checked by hand: one plan per example, one
verdict per (system, example), the per-system judging adds up to the per-judge usage, and a
generation's seconds are its steps' sum. The budget tests withhold examples by count and by
seconds (a fake clock at the driver, a tiny cap at the stage) and check the message, the missing
outputs, the unstamped stage and the rerun that continues from the example cache.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import omnieval.benchmarks  # noqa: F401  (registers the storybench rubrics the judges read)
from omnieval.backends.llm import ChatRequest, Completion
from omnieval.candidates import Modality, read_candidate
from omnieval.config import SuiteConfig, load_suite
from omnieval.stages import generate, judge, track, validate
from omnieval.stages._common import stamp_path, state_paths
from omnieval.stages.report import generation_facts
from omnieval.systems import GenerationRequest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "storybench-sample"
PLAN_TOKENS = (100, 20)
VERDICT_TOKENS = (50, 10)

#: A command system's generator: writes the narration only (image and speech are "not written"),
#: and logs each call, so the tests count the examples really generated.
WRITER = """
import json, os, sys
input_dir, output_dir = sys.argv[1], sys.argv[2]
task = json.load(open(os.path.join(input_dir, "task.json"), encoding="utf-8"))
with open(os.environ["GEN_LOG"], "a", encoding="utf-8") as fh:
    fh.write(str(task["index"]) + "\\n")
with open(os.path.join(output_dir, task["outputs"]["text"]), "w", encoding="utf-8") as fh:
    fh.write("The next page: " + task["current_text"][:60])
"""


def planner(request: ChatRequest) -> Completion:
    """A usable plan for every page, with the token counts a server would report."""
    plan = {
        "narration": "Pip walked on with the lantern, and the forest grew quiet around him.",
        "image_prompt": "Pip the happy fox holds a glowing lantern beside the stream at night",
        "speech": {
            "text": "We are almost home!",
            "emotion": "happy",
            "gender": "male",
            "speed": "normal",
            "pitch": "normal",
        },
    }
    return Completion(json.dumps(plan), "stop", *PLAN_TOKENS)


def text_judge(request: ChatRequest) -> Completion:
    """A 7 on every text criterion, with token counts."""
    from omnieval.judges import TRACKS

    answer = {k: {"score": 7, "rationale": "reads well"} for k in TRACKS["text"].criteria}
    return Completion(json.dumps(answer), "stop", *VERDICT_TOKENS)


@pytest.fixture(autouse=True)
def _no_whisper(monkeypatch: pytest.MonkeyPatch) -> None:
    # The candidates gate asks Whisper whether each speech clip holds speech; these tests count
    # calls and seconds, not speech, and run no real model.
    monkeypatch.setattr("omnieval.gates._candidates._no_speech_notes", lambda *args, **kwargs: [])


def _panel(folder: Path) -> Path:
    judge_entry = {
        "id": "scripted-judge",
        "model": "scripted/text",
        "backend": {"kind": "scripted", "script": f"{__name__}:text_judge"},
        "decoding": {"temperature": 0.0, "max_tokens": 128},
        "framing": {"schema_constrained": True},
        "retries": 0,
        "batch_size": 2,
    }
    panel = {
        "name": "scripted-text",
        "tracks": {
            "text": {"judges": [judge_entry]},
            "speech": {"unavailable": "text only in this test"},
            "image": {"unavailable": "text only in this test"},
        },
    }
    path = folder / "panel.yaml"
    path.write_text(yaml.safe_dump(panel, sort_keys=False), encoding="utf-8")
    return path


def _command(folder: Path) -> dict[str, Any]:
    script = folder / "write_text.py"
    script.write_text(WRITER, encoding="utf-8")
    return {
        "kind": "command",
        "argv": [sys.executable, "-S", str(script), "{input_dir}", "{output_dir}"],
        "timeout_s": 60,
        "env": {"GEN_LOG": str(folder / "calls.log")},
    }


def _suite(folder: Path, systems: dict[str, Any], *, limit: int, **extra: Any) -> SuiteConfig:
    suite = {
        "suite": "cost",
        "benchmark": "storybench",
        "dataset": {"name": "storybench-sample", "path": str(SAMPLE), "limit": limit},
        "systems": systems,
        "judges": {"panels": []},
        "analyses": {"enabled": False},
        "drift": {"enabled": False},
        "state_dir": str(folder / "state"),
        "runs_dir": str(folder / "runs"),
        **extra,
    }
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return load_suite(path)


def _calls(folder: Path) -> list[int]:
    log = folder / "calls.log"
    return [int(line) for line in log.read_text(encoding="utf-8").split()] if log.is_file() else []


# -- usage.json split by stage -------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """validate, generate (3 systems), judge (text): the state the track stage reads."""
    folder = tmp_path_factory.mktemp("cost")
    patch = pytest.MonkeyPatch()
    patch.setattr("omnieval.gates._candidates._no_speech_notes", lambda *args, **kwargs: [])
    orchestration = {
        "kind": "orchestration",
        "planner": {
            "model": "scripted-planner",
            "backend": {"kind": "scripted", "script": f"{__name__}:planner"},
        },
        "image": {"name": "drawn", "size": 64},
        "speech": {"name": "espeak", "controlled_rate": False},
    }
    config = _suite(
        folder,
        {"oracle": {"kind": "oracle"}, "orch": orchestration, "ext": _command(folder)},
        limit=2,
        judges={"panels": [str(_panel(folder))]},
        costs={
            "scripted-planner": {"prompt_per_million": 1.0, "completion_per_million": 10.0},
            "scripted-judge": {"prompt_per_million": 2.0, "completion_per_million": 20.0},
        },
    )
    state = validate.run(config)
    for system in config.systems:
        generate.run(config, system, state.instances, state.digest)
    judge.run(config, state.instances, state.digest)
    paths = state_paths(config)
    _metrics, _judges, systems = track._lineage_parts(config, paths)
    usage = track._run_usage(config, paths, systems)
    yield {"config": config, "state": state, "usage": usage, "folder": folder}
    patch.undo()


def test_usage_json_splits_generation_from_judging_per_system(small_run: dict[str, Any]) -> None:
    usage = small_run["usage"]
    n = 2
    # The old keys stay for current readers.
    assert {"judges", "systems", "judge_output_reused", "total"} <= set(usage)
    assert set(usage["by_system"]) == {"oracle", "orch", "ext"}
    assert all(set(entry) == {"generation", "judging"} for entry in usage["by_system"].values())

    orch = usage["by_system"]["orch"]["generation"]
    assert (orch["kind"], orch["generates"], orch["model"]) == ("orchestration", True, "scripted-planner")
    # One plan per example, 100 + 20 tokens each; priced at 1 and 10 per million.
    assert (orch["calls"], orch["prompt_tokens"], orch["completion_tokens"]) == (n, 100 * n, 20 * n)
    assert orch["cost"] == pytest.approx(200 * 1e-6 + 40 * 10e-6) and orch["currency"] == "USD"
    assert set(orch["seconds_by_step"]) == {"plan", "text", "image", "speech"}
    assert orch["seconds"] == pytest.approx(sum(orch["seconds_by_step"].values()), abs=2e-3)
    assert orch["seconds_by_step"]["speech"] > 0 and orch["seconds_by_step"]["image"] > 0
    assert (orch["examples"], orch["examples_generated"], orch["examples_reused"]) == (n, n, 0)
    assert orch["examples_withheld"] == 0 and orch["output_reused"] is False

    ext = usage["by_system"]["ext"]["generation"]
    assert (ext["kind"], ext["calls"], ext["prompt_tokens"]) == ("command", 0, 0)  # no model call of ours
    assert set(ext["seconds_by_step"]) == {"command"} and ext["seconds"] > 0
    assert ext["examples_generated"] == n

    oracle = usage["by_system"]["oracle"]["generation"]
    assert (oracle["generates"], oracle["seconds"], oracle["calls"]) == (False, 0.0, 0)

    # Judging: one text verdict per (system, example), 50 + 10 tokens each.
    for system in ("oracle", "orch", "ext"):
        judging = usage["by_system"][system]["judging"]
        assert (judging["calls"], judging["prompt_tokens"], judging["completion_tokens"]) == (
            n,
            50 * n,
            10 * n,
        )
        assert judging["judges"]["scripted-judge"]["calls"] == n
        assert judging["cost"] == {"USD": pytest.approx(100 * 2e-6 + 20 * 20e-6)}
    # The per-system split adds up to the per-judge usage.
    assert usage["judging"]["calls"] == 3 * n == usage["judges"]["scripted-judge"]["calls"]
    split = sum(e["judging"]["seconds"] for e in usage["by_system"].values())
    assert split == pytest.approx(usage["judges"]["scripted-judge"]["seconds"], abs=5e-3)
    assert usage["judging"]["output_reused"] is False

    generation = usage["generation"]
    assert (generation["calls"], generation["prompt_tokens"]) == (n, 100 * n)
    assert generation["examples_generated"] == 2 * n  # orch and ext; the oracle generates nothing
    assert generation["seconds"] == pytest.approx(orch["seconds"] + ext["seconds"], abs=2e-3)
    assert generation["seconds_by_step"]["command"] == ext["seconds_by_step"]["command"]
    assert generation["cost"] == {"USD": pytest.approx(orch["cost"])}

    # The leaderboard's typed block accepts it; the night record reads one entry per stage.
    from omnieval.benchmarks._leaderboard import RunUsage
    from omnieval.night._record import suite_usage

    RunUsage.model_validate(usage)
    night = suite_usage(usage)
    assert (night.generation.calls, night.judging.calls) == (n, 3 * n)


def test_mlflow_metrics_and_report_show_the_split(small_run: dict[str, Any]) -> None:
    from omnieval.reporting import usage_block
    from omnieval.tracking import usage_metrics

    usage = small_run["usage"]
    metrics = usage_metrics(usage)
    assert metrics["usage.system.orch.generation.calls"] == 2.0
    assert metrics["usage.system.orch.generation.prompt_tokens"] == 200.0
    assert metrics["usage.system.ext.generation.seconds.command"] > 0
    assert metrics["usage.system.oracle.judging.calls"] == 2.0
    assert not any(key.startswith("usage.system.oracle.generation") for key in metrics)  # a reference
    assert metrics["usage.system.oracle.judging.cost.USD"] == pytest.approx(0.0006)
    assert metrics["usage.generation.examples_generated"] == 4.0
    assert metrics["usage.judging.calls"] == 6.0
    assert metrics["usage.judge.scripted-judge.calls"] == 6.0  # the existing keys stay

    html = usage_block(usage)
    assert "Cost by stage" in html and "<strong>run</strong>" in html
    assert "2 / 0 / 0" in html  # orch: generated / reused / withheld
    assert "200 / 40" in html  # orch's planner tokens


def test_a_rerun_that_reuses_the_candidates_says_so(small_run: dict[str, Any]) -> None:
    config, state = small_run["config"], small_run["state"]
    outcome = generate.run(config, "ext", state.instances, state.digest)
    assert outcome.skipped
    paths = state_paths(config)
    _metrics, _judges, systems = track._lineage_parts(config, paths)
    usage = track._run_usage(config, paths, systems)
    assert usage["by_system"]["ext"]["generation"]["output_reused"] is True
    assert usage["by_system"]["orch"]["generation"]["output_reused"] is False


# -- the generation budget -----------------------------------------------------------------------


def test_max_examples_withholds_the_rest_and_a_larger_budget_continues_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _suite(
        tmp_path, {"ext": _command(tmp_path)}, limit=4, generation={"budget": {"max_examples": 2}}
    )
    state = validate.run(config)
    generate.run(config, "ext", state.instances, state.digest)
    assert _calls(tmp_path) == [0, 1]
    reason = (
        "generation budget used: 2 of max_examples 2 examples generated; rerun with a larger "
        "generation.budget to finish (generated examples come from the cache)"
    )
    assert f"[generate] ext: 2 examples not generated: {reason}" in capsys.readouterr().err
    root = state_paths(config).candidates("ext")
    for index in (2, 3):
        for modality in ("text", "image", "speech"):
            assert (root / modality / str(index) / "missing.txt").read_text(
                encoding="utf-8"
            ).strip() == reason
        raw = json.loads((root / "raw" / str(index) / "generated_raw.json").read_text(encoding="utf-8"))
        assert raw["withheld"] == reason
    assert read_candidate(root, Modality.TEXT, 1).present
    # The summary and the leaderboard's completeness say so; the withheld count as missing.
    summary = json.loads((root.parent / "ext.summary.json").read_text(encoding="utf-8"))
    block = summary["lineage"]["generation"]
    assert (block["examples_generated"], block["examples_withheld"], block["withheld_reason"]) == (
        2,
        2,
        reason,
    )
    facts = generation_facts(config)["ext"]
    assert facts["completeness"]["missing"]["text"] == 2 and facts["examples_withheld"] == 2
    assert not stamp_path(state_paths(config), "generate@ext").is_file()  # not stamped: incomplete

    # A larger budget: the two generated come from the cache, only the withheld two run.
    bigger = _suite(
        tmp_path, {"ext": _command(tmp_path)}, limit=4, generation={"budget": {"max_examples": 4}}
    )
    generate.run(bigger, "ext", state.instances, state.digest)
    assert _calls(tmp_path) == [0, 1, 2, 3]
    block = json.loads((root.parent / "ext.summary.json").read_text(encoding="utf-8"))["lineage"][
        "generation"
    ]
    assert (block["examples_generated"], block["examples_reused"], block["examples_withheld"]) == (2, 2, 0)
    assert "withheld_reason" not in block
    assert all(read_candidate(root, Modality.TEXT, i).present for i in range(4))
    assert generate.run(bigger, "ext", state.instances, state.digest).skipped  # stamped now


def test_max_seconds_at_the_stage_finishes_the_example_in_flight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Any example takes longer than a millisecond: the first runs (nothing spent yet), the rest wait.
    config = _suite(
        tmp_path, {"ext": _command(tmp_path)}, limit=3, generation={"budget": {"max_seconds": 0.001}}
    )
    state = validate.run(config)
    generate.run(config, "ext", state.instances, state.digest)
    assert _calls(tmp_path) == [0]
    err = capsys.readouterr().err
    assert "[generate] ext: 2 examples not generated: generation budget used:" in err
    assert "of max_seconds 0.001 s spent" in err


def test_max_seconds_with_a_fake_clock(tmp_path: Path) -> None:
    """The driver times each generated example with the limit's clock; cache hits are free."""
    from omnieval.benchmarks import get_benchmark
    from omnieval.systems import ExampleResult, GeneratingSystem, GenerationBudget, GenerationLimit, Task
    from omnieval.systems.command import CommandConfig

    now = [0.0]
    runs: list[int] = []

    def clock() -> float:
        return now[0]

    class Scripted(GeneratingSystem):
        kind = "scripted-test"
        config_model = CommandConfig

        def run_example(self, task: Task, workdir: Path) -> ExampleResult:
            now[0] += 2.0  # each example "takes" 2 s
            runs.append(task.index)
            (workdir / "text.txt").write_text(f"page {task.index}", encoding="utf-8")
            return ExampleResult(written={"text": "text.txt"}, seconds={"text": 2.0})

    bench = get_benchmark("storybench")
    instances = tuple(bench.instances(bench.load(SAMPLE)))[:4]
    system = Scripted(CommandConfig(argv=("true",)), system_id="s", cache_dir=tmp_path / "cache")
    limit = GenerationLimit(GenerationBudget(max_seconds=3.0), clock=clock)
    first = system.generate(
        GenerationRequest(
            instances, tmp_path / "a", visible=bench.visible_task, modalities=("text",), limit=limit
        )
    )
    # 0 s spent -> example 0 (2 s); 2 s < 3 s -> example 1 (4 s); then withheld.
    assert runs == [0, 1] and (limit.examples, limit.seconds, limit.withheld) == (2, 4.0, 2)
    block = first.lineage["generation"]
    assert block["seconds_generated"] == {"text": 4.0} and block["examples_withheld"] == 2
    assert "4.0 s of max_seconds 3 s spent" in block["withheld_reason"]
    assert first.missing == {"text": 2}

    # Same cap, fresh limit: the two cached examples are free, so two more are generated.
    again = GenerationLimit(GenerationBudget(max_seconds=3.0), clock=clock)
    second = system.generate(
        GenerationRequest(
            instances, tmp_path / "b", visible=bench.visible_task, modalities=("text",), limit=again
        )
    )
    assert runs == [0, 1, 2, 3]
    block = second.lineage["generation"]
    assert (block["examples_reused"], block["examples_generated"], block["examples_withheld"]) == (2, 2, 0)
    assert block["seconds"] == {"text": 8.0} and block["seconds_generated"] == {"text": 4.0}


def test_the_budget_is_typed_config() -> None:
    from pydantic import ValidationError

    from omnieval.config import GenerationConfig

    assert GenerationConfig.model_validate({"budget": {"max_examples": 3}}).budget is not None
    for bad in ({"budget": {}}, {"budget": {"max_examples": 0}}, {"budget": {"max_calls": 3}}, {"limit": 1}):
        with pytest.raises(ValidationError):
            GenerationConfig.model_validate(bad)


def test_a_system_with_conditions_counts_its_model_once_and_its_seconds_per_condition() -> None:
    """A system runs every condition on one load, so each condition's lineage usage is cumulative."""
    from omnieval.stages._usage import generation_entry

    def part(calls: int, plan: float, generated: int) -> dict[str, Any]:
        usage = {
            "calls": calls,
            "prompt_tokens": 10 * calls,
            "completion_tokens": calls,
            "calls_with_tokens": calls,
        }
        return {
            "kind": "cascade",
            "lineage": {
                "usage": {**usage, "seconds": plan, "model": "planner-x"},
                "generation": {
                    "seconds": {"plan": plan},
                    "seconds_generated": {"plan": plan},
                    "completeness": {"examples": 3},
                    "examples_generated": generated,
                    "examples_reused": 3 - generated,
                    "examples_withheld": 0,
                },
            },
        }

    summary = {"system": "c", "conditions": {"oracle": part(5, 1.5, 2), "original": part(3, 2.0, 3)}}
    entry = generation_entry(summary, {}, system="c")
    assert (entry["calls"], entry["prompt_tokens"], entry["model"]) == (5, 50, "planner-x")
    assert entry["seconds_by_step"] == {"plan": 3.5} and entry["seconds"] == 3.5
    assert (entry["examples"], entry["examples_generated"], entry["examples_reused"]) == (6, 5, 1)
