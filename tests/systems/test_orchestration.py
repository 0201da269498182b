"""The ``orchestration`` kind: planning failures by cause, completeness and the arithmetic between
valid-only and zero-filled that those failures imply.

A scripted planner (``backends/llm`` scripted kind) answers a usable plan for most examples and
fails on chosen ones: broken JSON, a missing field, a refusal, an unusable image prompt. The test
checks that the leaderboard's ``generation`` block counts exactly those, that every failed example
lost all three outputs, and, on a scores table whose statuses come from the generated candidate
folder, that the real storybench aggregation's zero-filled values equal the valid-only values
scaled by the share of examples the failures left (computed by hand here). A slow test runs the
shipped ``orchestrated-cpu`` entry (packaged Qwen planner, espeak, drawn) on one example.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from omnieval.backends.llm import ChatRequest
from omnieval.benchmarks.storybench._brief import PLAN_LABELS, brief
from omnieval.candidates import Modality, read_candidate
from omnieval.systems import GenerationRequest
from omnieval.systems.orchestration import (
    OrchestrationConfig,
    OrchestrationSystem,
    check_plan,
    schema,
    user_prompt,
)

ROOT = Path(__file__).resolve().parents[2]
N = 8
#: index -> how the scripted planner fails on it (the others get a usable plan).
FAILS = {1: "broken_json", 3: "missing_field", 4: "refusal", 6: "unusable_prompt"}
EXPECTED_CAUSES = {"unparseable_json": 1, "missing_field": 1, "refusal": 1, "unusable_prompt": 1}

#: current-page text (first words) -> index; filled by the fixture, read by the script.
_KEYS: dict[str, int] = {}
CALLS: list[int] = []


def _key(text: str) -> str:
    return " ".join(text.split())[:80]


def planner_script(request: ChatRequest) -> str:
    """The scripted planner: find the example by its current page, answer or fail as FAILS says."""
    prompt = "".join(p.text for m in request.messages for p in m.parts if hasattr(p, "text"))
    index = next(i for key, i in _KEYS.items() if key in " ".join(prompt.split()))
    CALLS.append(index)
    plan: dict[str, Any] = {
        "narration": f"Page {index}: the friends walked on together, and the lantern glowed warmly.",
        "image_prompt": "Pip the happy fox holds a glowing lantern beside the stream at night",
        "speech": {
            "text": "Come on, we are almost home!",
            "emotion": "Happy",
            "gender": "male",
            "speed": "fast",
            "pitch": "normal",
        },
    }
    how = FAILS.get(index)
    if how == "broken_json":
        return '{"narration": "Pip ran and ran'
    if how == "missing_field":
        del plan["image_prompt"]
    if how == "refusal":
        return "I'm sorry, but I can't help with writing this story."
    if how == "unusable_prompt":
        plan["image_prompt"] = "an image"
    return json.dumps(plan)


def _config(**planner: Any) -> OrchestrationConfig:
    return OrchestrationConfig.model_validate(
        {
            "kind": "orchestration",
            "planner": {
                "model": "scripted-planner",
                "backend": {"kind": "scripted", "script": f"{__name__}:planner_script"},
                **planner,
            },
            "image": {"name": "drawn", "size": 64},
            "speech": {"name": "espeak", "controlled_rate": False},
        }
    )


@pytest.fixture(scope="module")
def generated(
    storybench_instances: tuple[Any, ...], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    from omnieval.benchmarks import get_benchmark

    bench = get_benchmark("storybench")
    instances = storybench_instances[:N]
    _KEYS.clear()
    _KEYS.update({_key(i.current_text): i.index for i in instances})
    assert len(_KEYS) == N, "the chosen examples need distinct current pages"
    folder = tmp_path_factory.mktemp("orchestration")
    system = OrchestrationSystem(_config(), system_id="orch", cache_dir=folder / "cache")
    CALLS.clear()
    summary = system.generate(
        GenerationRequest(instances, folder / "out", visible=bench.visible_task, modalities=bench.modalities)
    )
    first_calls = list(CALLS)
    CALLS.clear()
    again = OrchestrationSystem(_config(), system_id="orch", cache_dir=folder / "cache")
    rerun = again.generate(
        GenerationRequest(
            instances, folder / "again", visible=bench.visible_task, modalities=bench.modalities
        )
    )
    return {
        "bench": bench,
        "instances": instances,
        "folder": folder,
        "summary": summary,
        "calls": first_calls,
        "rerun": rerun,
        "rerun_calls": list(CALLS),
    }


def test_failed_plans_remove_every_output_with_the_cause(generated: dict[str, Any]) -> None:
    out = generated["folder"] / "out"
    for index in range(N):
        raw = json.loads((out / "raw" / str(index) / "generated_raw.json").read_text(encoding="utf-8"))
        for modality in (Modality.TEXT, Modality.IMAGE, Modality.SPEECH):
            found = read_candidate(out, modality, index)
            if index in FAILS:
                assert not found.present, (index, modality)
                reason = (out / modality.value / str(index) / "missing.txt").read_text(encoding="utf-8")
                assert reason.startswith(f"planning failure: {raw['planning_failure']}"), reason
            else:
                assert found.present, (index, modality, found.problem)
        if index in FAILS:
            assert raw["planning_failure"] == {"broken_json": "unparseable_json"}.get(
                FAILS[index], FAILS[index]
            )
            assert raw["planner_output"] is not None
        else:
            assert raw["planning_failure"] is None
            assert (
                raw["seconds"]["plan"] >= 0 and raw["seconds"]["image"] > 0 and raw["seconds"]["speech"] > 0
            )
            assert raw["speech_expert"]["not_rendered"] == ["emotion"]  # espeak has no emotion
            assert raw["image_expert"]["drawn"]["characters"] == ["Pip"]


def test_candidates_gate_passes_and_counts_the_missing(generated: dict[str, Any]) -> None:
    from omnieval.gates import gate_candidates

    gate = gate_candidates(generated["folder"] / "out", N, None, modalities=generated["bench"].modalities)
    assert gate.success, gate
    assert any(f"text: {len(FAILS)} of {N} outputs missing" in note for note in gate.notes), gate.notes


def test_leaderboard_generation_block_counts_exactly_the_failures(
    generated: dict[str, Any], tmp_path: Path
) -> None:
    from omnieval.config import load_suite
    from omnieval.stages._common import state_paths
    from omnieval.stages.report import generation_facts

    suite = {
        "suite": "orch-arith",
        "benchmark": "storybench",
        "dataset": {
            "name": "storybench-sample",
            "path": str(ROOT / "data" / "storybench-sample"),
            "limit": N,
        },
        "systems": {"orch": _config().model_dump(mode="json")},
        "judges": {"panels": []},
        "analyses": {"enabled": False},
        "drift": {"enabled": False},
        "state_dir": str(tmp_path / "state"),
        "runs_dir": str(tmp_path / "runs"),
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    config = load_suite(path)
    summary = generated["summary"]
    # The generate stage's summary file, as stages/generate.py writes it.
    target = state_paths(config).root / "candidates" / "orch.summary.json"
    target.parent.mkdir(parents=True)
    target.write_text(
        json.dumps(
            {
                "system": "orch",
                "kind": summary.kind,
                "written": summary.written,
                "missing": summary.missing,
                "lineage": summary.lineage,
            }
        ),
        encoding="utf-8",
    )
    block = generation_facts(config)["orch"]
    assert block["planning_failures"] == EXPECTED_CAUSES
    assert block["completeness"] == {
        "examples": N,
        "missing": {m: len(FAILS) for m in ("text", "image", "speech")},
    }
    assert block["examples_generated"] == N and block["examples_reused"] == 0
    assert set(block["seconds"]) == {"plan", "text", "image", "speech"}
    lineage = summary.lineage
    assert "drawn images (not a generative model)" in lineage["label"] and "espeak voice" in lineage["label"]
    assert lineage["experts"]["image"]["generative_model"] is False

    # The report page shows the completeness table with the system's own label.
    from omnieval.benchmarks import ReportJob, RunFacts

    scores, _values = _scores_from_candidates(generated["folder"] / "out", generated["instances"])
    board = dict(generated["bench"].leaderboard(scores, RunFacts(N, {})).document)
    board["systems"]["orch"]["generation"] = block
    generated["bench"].write_report(ReportJob(tmp_path / "report.html", config, board, tmp_path / "analyses"))
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="completeness"' in page and "drawn images (not a generative model), espeak voice" in page


def test_rerun_with_nothing_changed_calls_no_planner(generated: dict[str, Any]) -> None:
    assert sorted(generated["calls"]) == list(range(N))
    assert generated["rerun_calls"] == []
    block = generated["rerun"].lineage["generation"]
    assert block["examples_reused"] == N and block["planning_failures"] == EXPECTED_CAUSES
    # Usage counts the planner calls made (one per example, none on the rerun); the scripted planner
    # reports no tokens, so they are unknown rather than 0.
    first, rerun = generated["summary"].lineage["usage"], generated["rerun"].lineage["usage"]
    assert first["calls"] == N and first["prompt_tokens"] is None and first["seconds"] >= 0
    assert rerun["calls"] == 0


def _scores_from_candidates(out: Path, instances: tuple[Any, ...]) -> tuple[Any, dict[str, dict[int, float]]]:
    """A scores table whose statuses follow the candidate folder (as the metrics stage sets them):
    a present output gets a value chosen here, a missing one ``missing_output``."""
    from omnieval.scores import ScoreRow, scores_frame

    rows: list[ScoreRow] = []
    values: dict[str, dict[int, float]] = {
        "bertscore_f1": {},
        "image_similarity": {},
        "speech_meta_accuracy": {},
    }
    fields = ("emotion", "speed", "pitch", "gender")
    for inst in instances:
        i = inst.index

        def add(
            track: str, comp: str, crit: str, value: float | None, _i: int = i, _id: str = inst.id
        ) -> None:
            status = "ok" if value is not None else "missing_output"
            rows.append(ScoreRow("storybench", "orch", _id, _i, track, comp, "", crit, value, status))

        text = read_candidate(out, Modality.TEXT, i).present
        image = read_candidate(out, Modality.IMAGE, i).present
        speech = read_candidate(out, Modality.SPEECH, i).present
        bert = 0.50 + 0.04 * i if text else None
        sim = 0.30 + 0.05 * i if image else None
        add("text", "bertscore_f1", "value", bert)
        add("image", "image_similarity", "value", sim)
        hits = [float((i + k) % 2) for k in range(4)] if speech else [None] * 4
        for field, hit in zip(fields, hits, strict=True):
            add("speech", "speech_meta", field, hit)
        if bert is not None:
            values["bertscore_f1"][i] = bert
        if sim is not None:
            values["image_similarity"][i] = sim
        if speech:
            values["speech_meta_accuracy"][i] = sum(h for h in hits if h is not None) / 4
    return scores_frame(rows), values


def test_zero_filled_differs_from_valid_only_exactly_by_the_failed_examples(
    generated: dict[str, Any],
) -> None:
    from omnieval.benchmarks import RunFacts

    scores, values = _scores_from_candidates(generated["folder"] / "out", generated["instances"])
    board = generated["bench"].leaderboard(scores, RunFacts(N, {})).document
    entry = board["systems"]["orch"]
    kept = N - len(FAILS)
    for component, per_example in values.items():
        assert sorted(per_example) == [i for i in range(N) if i not in FAILS]
        valid_by_hand = sum(per_example.values()) / kept
        zero_by_hand = valid_by_hand * kept / N  # each failed example adds 0 over N instances
        assert math.isclose(entry["valid_only"][component], valid_by_hand, rel_tol=1e-9), component
        assert math.isclose(entry["zero_filled"][component], zero_by_hand, rel_tol=1e-9), component
        delta = entry["valid_only"][component] - entry["zero_filled"][component]
        assert math.isclose(delta, valid_by_hand * len(FAILS) / N, rel_tol=1e-9), component


def test_planner_never_sees_a_target(storybench_instances: tuple[Any, ...]) -> None:
    inst = storybench_instances[0]
    from omnieval.benchmarks import get_benchmark

    task = get_benchmark("storybench").visible_task(inst, "")
    prompt = user_prompt(task.brief)
    assert _key(inst.current_text)[:40] in " ".join(prompt.split())
    assert inst.next_text[:40] not in prompt
    assert inst.target_speech.line not in prompt
    assert not hasattr(task.inputs, "next_text") and not hasattr(task.inputs, "target_speech")


def test_plan_rules() -> None:
    good: dict[str, Any] = {
        "narration": "Pip ran home.",
        "image_prompt": "Marta waves from the red lighthouse at dawn",
        "speech": {
            "text": "Hello!",
            "emotion": "neutral",
            "gender": "female",
            "speed": "slow",
            "pitch": "high",
        },
    }
    assert check_plan(good, PLAN_LABELS) is None
    for prompt in ("", "N/A", "a nice picture", "the and the but"):
        failure = check_plan({**good, "image_prompt": prompt}, PLAN_LABELS)
        assert failure is not None and failure[0].value == "unusable_prompt", prompt
    bad = check_plan({**good, "speech": {**good["speech"], "pitch": "squeaky"}}, PLAN_LABELS)
    assert bad is not None and bad[0].value == "missing_field" and "speech.pitch" in bad[1]


@pytest.mark.slow
def test_orchestrated_cpu_on_one_example_with_the_packaged_planner(
    storybench_instances: tuple[Any, ...], tmp_path: Path
) -> None:
    """The nightly's own ``orchestrated-cpu`` entry, one planner call on the packaged Qwen."""
    from omnieval.benchmarks import get_benchmark
    from omnieval.gates import gate_candidates

    nightly = yaml.safe_load((ROOT / "pipelines" / "nightly.yaml").read_text(encoding="utf-8"))
    config = OrchestrationConfig.model_validate(nightly["systems"]["orchestrated-cpu"])
    assert (
        config.planner.backend.kind == "llamacpp"
        and config.image.name == "drawn"
        and config.speech.name == "espeak"
    )
    bench = get_benchmark("storybench")
    system = OrchestrationSystem(config, system_id="orchestrated-cpu", cache_dir=tmp_path / "cache")
    summary = system.generate(
        GenerationRequest(
            storybench_instances[:1],
            tmp_path / "out",
            visible=bench.visible_task,
            modalities=bench.modalities,
        )
    )
    raw = json.loads((tmp_path / "out" / "raw" / "0" / "generated_raw.json").read_text(encoding="utf-8"))
    block = summary.lineage["generation"]
    print(
        f"plan seconds: {raw['seconds']['plan']:.1f}; failure: {raw['planning_failure']}; plan: {raw['plan']}"
    )
    assert raw["planner_output"], raw
    # The shipped entry must plan this page: greedy decoding under the skeleton keeps the JSON and
    # the delivery codes valid, so a failure here is a regression of the entry, not bad luck. The
    # failure accounting is tested with the scripted planner above.
    assert summary.lineage["usage"]["calls"] == 1
    assert raw["planning_failure"] is None, raw
    for modality in (Modality.TEXT, Modality.IMAGE, Modality.SPEECH):
        assert read_candidate(tmp_path / "out", modality, 0).present
    assert block["completeness"]["missing"] == {}
    assert sum(block["planning_failures"].values()) == 0 and block["examples_generated"] == 1
    gate = gate_candidates(tmp_path / "out", len(storybench_instances), None, modalities=bench.modalities)
    assert gate.success, gate


def test_report_completeness_table(generated: dict[str, Any]) -> None:
    from omnieval.benchmarks import RunFacts
    from omnieval.benchmarks.storybench._report import (
        completeness_html,
        completeness_lines,
        completeness_rows,
        leaderboard_table,
    )

    scores, _values = _scores_from_candidates(generated["folder"] / "out", generated["instances"])
    board = generated["bench"].leaderboard(scores, RunFacts(N, {})).document
    board["systems"]["orch"]["generation"] = generated["summary"].lineage["generation"]
    (row,) = completeness_rows(board)
    entry = board["systems"]["orch"]
    assert row.examples == N and row.missing == {"text": 4, "image": 4, "speech": 4}
    assert row.failures == EXPECTED_CAUSES
    assert row.delta is not None and row.delta > 0
    assert math.isclose(
        row.delta, entry["valid_only"]["total_average"] - entry["zero_filled"]["total_average"]
    )
    assert set(row.seconds_per_example) == {"plan", "text", "image", "speech"}
    line = completeness_lines(board)[1]
    assert (
        "orch: missing 4/4/4 of 8; planning failures 4 (unparseable_json 1, missing_field 1, unusable_prompt 1, refusal 1)"
        in line
    )
    html = completeness_html(
        board, {"orch": "scripted planner, drawn images (not a generative model), espeak voice"}
    )
    assert (
        "missing T" in html and "drawn images (not a generative model)" in html and "unusable_prompt" in html
    )
    assert "Completeness (missing T/I/S of N)" in leaderboard_table(board)


def test_configs_are_typed_and_strict() -> None:
    from pydantic import ValidationError

    from omnieval.systems import config_model
    from omnieval.systems.experts import DiffusersConfig
    from omnieval.systems.semi_orchestration import SemiOrchestrationConfig

    assert config_model("orchestration") is OrchestrationConfig
    assert config_model("semi-orchestration") is SemiOrchestrationConfig
    base = _config().model_dump(mode="json")
    for bad in (
        {"temperature": 0.5},
        {"image": {"name": "dalle"}},
        {"speech": {"name": "espeak", "voice": "x"}},
    ):
        with pytest.raises(ValidationError):
            OrchestrationConfig.model_validate({**base, **bad})
    parsed = OrchestrationConfig.model_validate(
        {**base, "image": {"name": "diffusers", "model_path": "/models/flux-kontext", "mode": "image_prompt"}}
    )
    assert isinstance(parsed.image, DiffusersConfig) and parsed.image.mode == "image_prompt"


def test_label_codes_are_constrained_integers(storybench_instances: tuple[Any, ...]) -> None:
    from omnieval.backends.llm._skeleton import IntChoice, plan_schema
    from omnieval.systems._plan import speech_labels

    segments = plan_schema(schema(PLAN_LABELS, 240, 160, 100, "codes"))
    assert segments is not None  # the fast skeleton path, not a grammar
    choices = {s.path: s.values for s in segments if isinstance(s, IntChoice)}
    assert choices == {
        "speech/emotion": (0, 1, 2, 3),
        "speech/gender": (0, 1),
        "speech/speed": (0, 1, 2),
        "speech/pitch": (0, 1, 2),
    }
    plan = {
        "narration": "Pip ran home.",
        "image_prompt": "Pip the fox runs home through the dark forest",
        "speech": {"text": "Wait!", "emotion": 3, "gender": 1, "speed": 2, "pitch": 0},
    }
    assert check_plan(plan, PLAN_LABELS) is None
    assert speech_labels(plan, PLAN_LABELS) == {
        "emotion": "angry",
        "gender": "male",
        "speed": "fast",
        "pitch": "low",
    }
    prompt = user_prompt(brief(storybench_instances[0].task_inputs()), style="codes")
    assert "0 neutral, 1 happy, 2 sad, 3 angry" in prompt and "0 female, 1 male" in prompt
