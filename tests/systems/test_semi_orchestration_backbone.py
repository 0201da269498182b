"""``semi-orchestration`` with a two-modality backbone (Omni-StoryBench section 5.1): the backbone
writes text+speech (or text+image) and the intermediate fields; one expert renders the third.

By the paper's failure rule (section 5, Figure 4, the zero-filled appendix) unusable intermediate
fields fail the whole example: all three outputs missing with the cause, counted by cause, the
backbone's own files kept under ``raw/<index>/unscored/`` and never scored; only ``openai-omni``'s
first-pass speech survives a failed second pass.
"""

from __future__ import annotations

import json
import math
import struct
import sys
import wave
from pathlib import Path
from typing import Any

import pytest
import yaml

from omnieval.benchmarks import get_benchmark
from omnieval.candidates import Modality, read_candidate
from omnieval.systems import GenerationRequest
from omnieval.systems.semi_orchestration import SemiOrchestrationConfig, SemiOrchestrationSystem

PROMPT = "Pip the fox lifts a lantern in the snowy forest at night"
NARRATION = 'Pip lifted the lantern high. "Follow the light!" he called.'

#: index -> the intermediate fields a backbone writes (JSON text); others get :func:`_good_fields`.
BAD_FIELDS = {1: '{"image_prompt": "Pip the fox', 2: '{"caption": "Pip and the lantern"}'}
BAD_SPEECH = {
    1: '{"speech": {"text": "Hi", "emotion": "joyful", "gender": "male", "speed": "fast", "pitch": "low"}}'
}


def _wav(path: Path, seconds: float = 0.4, rate: int = 16000) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        n = int(seconds * rate)
        w.writeframes(
            b"".join(struct.pack("<h", int(8000 * math.sin(6.28 * 220 * i / rate))) for i in range(n))
        )


def _good_fields(third: str) -> str:
    if third == "image":
        return json.dumps({"image_prompt": PROMPT})
    line = {
        "text": "Follow the light!",
        "emotion": "Happy",
        "gender": "male",
        "speed": "fast",
        "pitch": "low",
    }
    return json.dumps({"speech": line})


def text_speech_backbone(input_dir: Path, output_dir: Path) -> None:
    """A scripted text+speech backbone (EMOVA's role) with the ``command`` protocol's folders."""
    task = json.loads((input_dir / "task.json").read_text(encoding="utf-8"))
    assert set(task["outputs"]) == {"text", "speech"} and task["intermediate"]["for"] == "image"
    assert task["intermediate"]["schema"]["required"] == ["image_prompt"]
    (output_dir / task["outputs"]["text"]).write_text(NARRATION, encoding="utf-8")
    _wav(output_dir / task["outputs"]["speech"])
    fields = BAD_FIELDS.get(task["index"], _good_fields("image"))
    (output_dir / task["intermediate"]["file"]).write_text(fields, encoding="utf-8")


def text_image_backbone(input_dir: Path, output_dir: Path) -> None:
    """A scripted text+image backbone (MMaDA's role): its picture is the current page's."""
    task = json.loads((input_dir / "task.json").read_text(encoding="utf-8"))
    assert set(task["outputs"]) == {"text", "image"} and task["intermediate"]["for"] == "speech"
    (output_dir / task["outputs"]["text"]).write_text(NARRATION, encoding="utf-8")
    (output_dir / task["outputs"]["image"]).write_bytes((input_dir / task["current_image"]).read_bytes())
    fields = BAD_SPEECH.get(task["index"], _good_fields("speech"))
    (output_dir / task["intermediate"]["file"]).write_text(fields, encoding="utf-8")


#: A stdlib-only command backbone: text+speech and the image prompt; crashes on index 2 and writes
#: no intermediate fields on index 3.
COMMAND_BACKBONE = r"""
import json, math, os, struct, sys, wave
input_dir, output_dir = sys.argv[1], sys.argv[2]
task = json.load(open(os.path.join(input_dir, "task.json"), encoding="utf-8"))
if task["index"] == 2:
    print("RuntimeError: backbone out of memory", file=sys.stderr)
    sys.exit(4)
open(os.path.join(output_dir, task["outputs"]["text"]), "w").write("Pip walked on. " + task["current_text"][:30])
with wave.open(os.path.join(output_dir, task["outputs"]["speech"]), "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(0.08 * i))) for i in range(6400)))
if task["index"] != 3:
    prompt = "Pip the fox walks through the snowy forest at dusk"
    json.dump({"image_prompt": prompt}, open(os.path.join(output_dir, task["intermediate"]["file"]), "w"))
"""


def _config(produces: str, backbone: dict[str, Any], **experts: Any) -> SemiOrchestrationConfig:
    return SemiOrchestrationConfig.model_validate(
        {"kind": "semi-orchestration", "produces": produces, "backbone": backbone, **experts}
    )


def _generate(config: SemiOrchestrationConfig, instances: tuple[Any, ...], root: Path, name: str) -> Any:
    bench = get_benchmark("storybench")
    system = SemiOrchestrationSystem(config, system_id=name, cache_dir=root / "cache")
    return system.generate(
        GenerationRequest(instances, root / name, visible=bench.visible_task, modalities=bench.modalities)
    )


def _reason(root: Path, modality: str, index: int) -> str:
    return (root / modality / str(index) / "missing.txt").read_text(encoding="utf-8").strip()


@pytest.fixture(scope="module")
def runs(storybench_instances: tuple[Any, ...], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("semi-two")
    instances = storybench_instances[:4]
    ts = _config(
        "text+speech",
        {"kind": "scripted", "script": f"{__name__}:text_speech_backbone"},
        image={"name": "drawn", "size": 64},
    )
    ti = _config(
        "text+image",
        {"kind": "scripted", "script": f"{__name__}:text_image_backbone"},
        speech={"name": "espeak", "controlled_rate": False},
    )
    return {
        "root": root,
        "instances": instances,
        "ts": _generate(ts, instances, root, "semi-ts"),
        "ti": _generate(ti, instances, root, "semi-ti"),
    }


def test_text_speech_backbone_and_image_expert_write_all_three(runs: dict[str, Any]) -> None:
    out = runs["root"] / "semi-ts"
    for index in (0, 3):
        for modality in Modality.TEXT, Modality.IMAGE, Modality.SPEECH:
            assert read_candidate(out, modality, index).present, (index, modality)
        assert (out / "text" / str(index) / "generated.txt").read_text(encoding="utf-8").strip() == NARRATION
        raw = json.loads((out / "raw" / str(index) / "generated_raw.json").read_text(encoding="utf-8"))
        assert raw["image_prompt"] == PROMPT and raw["planning_failure"] is None
        assert raw["image_expert"]["drawn"]["characters"] == ["Pip"]
    lineage = runs["ts"].lineage
    assert lineage["backbone"]["produces"] == ["text", "speech"] and set(lineage["experts"]) == {"image"}
    assert lineage["label"] == "scripted backbone (text+speech), drawn images (not a generative model)"
    assert set(lineage["generation"]["seconds"]) == {"backbone", "image"}


def _raw(root: Path, index: int) -> dict[str, Any]:
    return dict(json.loads((root / "raw" / str(index) / "generated_raw.json").read_text(encoding="utf-8")))


def _assert_failed_example(root: Path, index: int, reason: str, kept: dict[str, str]) -> None:
    """All three outputs missing with ``reason``; the backbone's files (modality -> file name) kept
    under ``raw/<index>/unscored/`` and named in ``generated_raw.json``."""
    for modality in Modality.TEXT, Modality.IMAGE, Modality.SPEECH:
        assert not read_candidate(root, modality, index).present, (index, modality)
        assert _reason(root, modality.value, index) == reason, (index, modality)
    unscored = root / "raw" / str(index) / "unscored"
    assert sorted(p.name for p in unscored.iterdir()) == sorted(kept.values())
    assert _raw(root, index)["unscored"] == {m: f"unscored/{name}" for m, name in kept.items()}


def test_unusable_fields_fail_all_three_outputs(runs: dict[str, Any]) -> None:
    out = runs["root"] / "semi-ts"
    block = runs["ts"].lineage["generation"]
    assert block["planning_failures"] == {"unparseable_json": 1, "missing_field": 1}
    assert block["completeness"]["missing"] == {"text": 2, "image": 2, "speech": 2}
    kept = {"text": "text.txt", "speech": "speech.wav"}
    _assert_failed_example(
        out, 1, f"planning failure: unparseable_json: {_raw(out, 1)['intermediate_error']}", kept
    )
    assert _reason(out, "text", 2) == "planning failure: missing_field: missing: image_prompt"
    _assert_failed_example(out, 2, _reason(out, "text", 2), kept)
    # The kept files are the backbone's own, byte for byte; its fields are in generated_raw.json.
    assert (out / "raw" / "1" / "unscored" / "text.txt").read_text(encoding="utf-8") == NARRATION
    assert _raw(out, 1)["planning_failure"] == "unparseable_json"
    assert _raw(out, 1)["intermediate_fields"] == BAD_FIELDS[1]
    for index in (0, 3):
        assert not (out / "raw" / str(index) / "unscored").exists()
        assert "unscored" not in _raw(out, index)
    # text+image backbone: a delivery label outside the vocabulary is a missing field: all three lost.
    out = runs["root"] / "semi-ti"
    block = runs["ti"].lineage["generation"]
    assert block["planning_failures"] == {"missing_field": 1}
    assert block["completeness"]["missing"] == {"text": 1, "image": 1, "speech": 1}
    _assert_failed_example(
        out,
        1,
        "planning failure: missing_field: speech.emotion: 'joyful' is not one of neutral, happy, sad, angry",
        {"text": "text.txt", "image": "image.png"},
    )
    for index in (0, 2, 3):
        for modality in Modality.TEXT, Modality.IMAGE, Modality.SPEECH:
            assert read_candidate(out, modality, index).present, (index, modality)
    raw = json.loads((out / "raw" / "0" / "generated_raw.json").read_text(encoding="utf-8"))
    assert raw["speech_plan"] == {
        "text": "Follow the light!",
        "emotion": "happy",
        "gender": "male",
        "speed": "fast",
        "pitch": "low",
    }
    assert read_candidate(out, Modality.SPEECH, 0).present


def test_report_completeness_table_shows_both_systems(runs: dict[str, Any]) -> None:
    from omnieval.benchmarks.storybench._report import completeness_html, completeness_lines

    board = {
        "n_instances": 4,
        "systems": {
            name: {"generation": runs[key].lineage["generation"]}
            for key, name in (("ts", "semi-ts"), ("ti", "semi-ti"))
        },
    }
    lines = completeness_lines(board)
    assert any(
        "semi-ts: missing 2/2/2 of 4; planning failures 2 (unparseable_json 1, missing_field 1)" in line
        for line in lines
    )
    assert any("semi-ti: missing 1/1/1 of 4; planning failures 1 (missing_field 1)" in line for line in lines)
    labels = {"semi-ts": runs["ts"].lineage["label"], "semi-ti": runs["ti"].lineage["label"]}
    html = completeness_html(board, labels)
    assert "scripted backbone (text+speech), drawn images (not a generative model)" in html
    assert "scripted backbone (text+image), espeak voice (not a generative model)" in html


#: The value every present output of a modality scores in :func:`_scores_from_candidates`.
VALUES = {"bertscore_f1": 0.6, "image_similarity": 0.4}


def _scores_from_candidates(out: Path, system: str, instances: tuple[Any, ...]) -> Any:
    """A scores table whose statuses follow the candidate folder, as the metrics stage sets them: a
    present output gets a fixed value (:data:`VALUES`; every speech field a hit), a missing one
    ``missing_output``."""
    from omnieval.scores import ScoreRow, scores_frame

    cells = (
        (Modality.TEXT, "text", "bertscore_f1", "value", VALUES["bertscore_f1"]),
        (Modality.IMAGE, "image", "image_similarity", "value", VALUES["image_similarity"]),
        *(
            (Modality.SPEECH, "speech", "speech_meta", f, 1.0)
            for f in ("emotion", "speed", "pitch", "gender")
        ),
    )
    rows = []
    for inst in instances:
        for modality, track, component, criterion, value in cells:
            present = read_candidate(out, modality, inst.index).present
            status = "ok" if present else "missing_output"
            row = (inst.id, inst.index, track, component, "", criterion, value if present else None, status)
            rows.append(ScoreRow("storybench", system, *row))
    return scores_frame(rows)


def test_leaderboard_completeness_and_one_coverage_factor(runs: dict[str, Any]) -> None:
    """The storybench leaderboard counts a failed example missing on all three modalities, so one
    coverage factor (complete examples over N, the paper's 713/900 for MMaDA) scales every
    zero-filled component alike."""
    from omnieval.benchmarks import RunFacts

    bench = get_benchmark("storybench")
    instances = runs["instances"]
    scores = _scores_from_candidates(runs["root"] / "semi-ts", "semi-ts", instances)
    entry = bench.leaderboard(scores, RunFacts(len(instances), {})).document["systems"]["semi-ts"]
    outputs = entry["completeness"]["outputs"]
    assert {m: outputs[m]["missing"] for m in ("text", "image", "speech")} == {
        "text": 2,
        "image": 2,
        "speech": 2,
    }
    coverage = 2 / 4
    for component, value in (*VALUES.items(), ("speech_meta_accuracy", 1.0)):
        assert math.isclose(entry["valid_only"][component], value, rel_tol=1e-9), component
        assert math.isclose(entry["zero_filled"][component], value * coverage, rel_tol=1e-9), component


def test_candidates_gate_accepts_the_kept_backbone_files(runs: dict[str, Any]) -> None:
    from omnieval.gates import candidates_gate_frame

    for name in "semi-ts", "semi-ti":
        frame = candidates_gate_frame(runs["root"] / name, 4)
        assert frame["in_layout"].all(), frame[~frame["in_layout"]]


def test_expert_failure_keeps_the_backbone_outputs(
    storybench_instances: tuple[Any, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnieval.systems.experts import EspeakSpeechExpert

    def broken(self: Any, plan: Any, out: Path) -> dict[str, Any]:
        raise RuntimeError("espeak-ng vanished")

    monkeypatch.setattr(EspeakSpeechExpert, "speak", broken)
    config = _config("text+image", {"kind": "scripted", "script": f"{__name__}:text_image_backbone"})
    summary = _generate(config, storybench_instances[:1], tmp_path, "semi-ti")
    out = tmp_path / "semi-ti"
    assert read_candidate(out, Modality.TEXT, 0).present and read_candidate(out, Modality.IMAGE, 0).present
    assert "speech expert espeak failed: RuntimeError: espeak-ng vanished" in _reason(out, "speech", 0)
    assert summary.lineage["generation"]["planning_failures"] == {}


def test_command_backbone_end_to_end(storybench_instances: tuple[Any, ...], tmp_path: Path) -> None:
    from omnieval.config import load_suite

    script = tmp_path / "backbone.py"
    script.write_text(COMMAND_BACKBONE, encoding="utf-8")
    entry = {
        "kind": "semi-orchestration",
        "produces": "text+speech",
        "backbone": {
            "kind": "command",
            "argv": [sys.executable, str(script), "{input_dir}", "{output_dir}"],
            "timeout_s": 30,
        },
        "image": {"name": "drawn", "size": 64},
    }
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        yaml.safe_dump({"suite": "s", "benchmark": "storybench", "systems": {"semi-cmd": entry}})
    )
    config = load_suite(suite).systems["semi-cmd"]
    assert isinstance(config, SemiOrchestrationConfig) and config.produces == "text+speech"
    summary = _generate(config, storybench_instances[:4], tmp_path, "semi-cmd")
    out = tmp_path / "semi-cmd"
    for index in (0, 1):
        for modality in Modality.TEXT, Modality.IMAGE, Modality.SPEECH:
            assert read_candidate(out, modality, index).present, (index, modality)
    # A crash loses everything with the command's cause (not a plan, nothing written to keep); no
    # fields fail the whole example, its text and speech kept unscored.
    for modality in "text", "image", "speech":
        assert _reason(out, modality, 2) == "crash: exit 4: RuntimeError: backbone out of memory"
    assert not (out / "raw" / "2" / "unscored").exists()
    _assert_failed_example(
        out,
        3,
        "planning failure: missing_field: no intermediate fields written",
        {"text": "text.txt", "speech": "speech.wav"},
    )
    block = summary.lineage["generation"]
    assert block["planning_failures"] == {"missing_field": 1}
    assert block["completeness"]["missing"] == {"text": 2, "image": 2, "speech": 2}
    assert (
        summary.lineage["label"]
        == "command backbone.py backbone (text+speech), drawn images (not a generative model)"
    )
    # A rerun is served from the example cache, kept files included; stale ones go.
    (out / "raw" / "0" / "unscored").mkdir()
    (out / "raw" / "0" / "unscored" / "text.txt").write_text("stale", encoding="utf-8")
    again = _generate(config, storybench_instances[:4], tmp_path, "semi-cmd")
    assert again.lineage["generation"]["examples_reused"] == 4
    assert not (out / "raw" / "0" / "unscored").exists()
    _assert_failed_example(
        out,
        3,
        "planning failure: missing_field: no intermediate fields written",
        {"text": "text.txt", "speech": "speech.wav"},
    )


#: A command backbone that writes its text, then hangs past its timeout.
HANGING_BACKBONE = r"""
import json, os, sys, time
input_dir, output_dir = sys.argv[1], sys.argv[2]
task = json.load(open(os.path.join(input_dir, "task.json"), encoding="utf-8"))
with open(os.path.join(output_dir, task["outputs"]["text"]), "w") as fh:
    fh.write("Pip began to walk.")
time.sleep(60)
"""


def test_command_backbone_timeout_fails_all_three_and_keeps_what_it_wrote(
    storybench_instances: tuple[Any, ...], tmp_path: Path
) -> None:
    script = tmp_path / "hang.py"
    script.write_text(HANGING_BACKBONE, encoding="utf-8")
    backbone = {"kind": "command", "argv": [sys.executable, str(script), "{input_dir}", "{output_dir}"]}
    config = _config("text+speech", {**backbone, "timeout_s": 2}, image={"name": "drawn", "size": 64})
    summary = _generate(config, storybench_instances[:1], tmp_path, "semi-hang")
    out = tmp_path / "semi-hang"
    reason = _reason(out, "text", 0)
    assert reason.startswith("planning failure: timeout: timeout after 2"), reason
    _assert_failed_example(out, 0, reason, {"text": "text.txt"})
    assert (out / "raw" / "0" / "unscored" / "text.txt").read_text(encoding="utf-8") == "Pip began to walk."
    block = summary.lineage["generation"]
    assert block["planning_failures"] == {"timeout": 1}
    assert block["completeness"]["missing"] == {"text": 1, "image": 1, "speech": 1}


def test_openai_omni_failed_second_pass_keeps_first_pass_speech(
    storybench_instances: tuple[Any, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnieval.systems.openai_omni import CallOutcome, OmniAnswer, OmniClient

    wav = tmp_path / "line.wav"
    _wav(wav)
    answers = {
        0: json.dumps({"narration": NARRATION, "image_prompt": PROMPT}),
        1: "Here is the page: Pip walks on.",
        2: None,
        3: json.dumps({"narration": NARRATION}),
    }
    calls: list[bool] = []

    def call(self: Any, messages: Any, *, audio: bool) -> CallOutcome:
        calls.append(audio)
        if audio:
            return CallOutcome(OmniAnswer("Follow the light!", wav.read_bytes(), "stop"), seconds=0.1)
        index = (len(calls) // 2) - 1
        text = answers[index]
        if text is None:
            return CallOutcome(None, "request failed: HTTP 400: bad request", seconds=0.1)
        return CallOutcome(OmniAnswer(text, None, "stop"), seconds=0.2)

    monkeypatch.setattr(OmniClient, "call", call)
    config = _config(
        "text+speech",
        {"kind": "openai-omni", "model": "Qwen/Qwen2.5-Omni-7B", "base_url": "http://127.0.0.1:9/v1"},
        image={"name": "drawn", "size": 64},
    )
    summary = _generate(config, storybench_instances[:4], tmp_path, "omni")
    out = tmp_path / "omni"
    assert calls == [True, False] * 4
    for modality in Modality.TEXT, Modality.IMAGE, Modality.SPEECH:
        assert read_candidate(out, modality, 0).present
    assert (out / "text" / "0" / "generated.txt").read_text(encoding="utf-8").strip() == NARRATION
    # A failed second pass (no JSON, a failed request, or fields missing even with a narration)
    # loses text and image; the first pass's speech, made apart from the fields, stays.
    for index in (1, 2, 3):
        assert read_candidate(out, Modality.SPEECH, index).present
        assert not read_candidate(out, Modality.TEXT, index).present
        assert not read_candidate(out, Modality.IMAGE, index).present
        assert _reason(out, "text", index) == _reason(out, "image", index)
        assert not (out / "raw" / str(index) / "unscored").exists()
    assert _reason(out, "text", 1).startswith("planning failure: unparseable_json")
    assert _reason(out, "image", 2) == "second pass failed: request failed: HTTP 400: bad request"
    assert _reason(out, "text", 3) == "planning failure: missing_field: missing: image_prompt"
    assert _raw(out, 3)["intermediate_fields"]["narration"] == NARRATION
    block = summary.lineage["generation"]
    assert block["planning_failures"] == {"unparseable_json": 1, "missing_field": 1}
    assert block["completeness"]["missing"] == {"text": 3, "image": 3}
    assert summary.lineage["label"].startswith("Qwen/Qwen2.5-Omni-7B backbone (text+speech), drawn images")


def test_existing_text_only_configs_load_unchanged() -> None:
    entry = {
        "kind": "semi-orchestration",
        "backbone": {"model": "m", "backend": {"kind": "scripted", "script": "x:y"}},
    }
    config = SemiOrchestrationConfig.model_validate(entry)
    assert config.produces == "text" and "produces" not in config.model_dump(mode="json")
    assert SemiOrchestrationConfig.model_validate(config.model_dump(mode="json")) == config
    for bad, match in (
        ({"backbone": {"kind": "command", "argv": ["x"]}}, "set produces"),
        ({"produces": "text+speech"}, "needs a kind"),
        (
            {
                "produces": "text+speech",
                "backbone": {"kind": "command", "argv": ["x"]},
                "speech": {"name": "espeak"},
            },
            "remove speech",
        ),
        (
            {
                "produces": "text+image",
                "backbone": {"kind": "openai-omni", "model": "m", "base_url": "http://h:1/v1"},
            },
            "text\\+speech",
        ),
        ({"produces": "text+image", "backbone": {"kind": "scripted", "script": "a:b", "typo": 1}}, "typo"),
    ):
        with pytest.raises(ValueError, match=match):
            SemiOrchestrationConfig.model_validate({**entry, **bad})


@pytest.mark.parametrize(("produces", "expert"), [("text+speech", "image"), ("text+image", "speech")])
def test_packaged_rule_backbone_on_cpu(
    storybench_instances: tuple[Any, ...], tmp_path: Path, produces: str, expert: str
) -> None:
    """The docs' CPU example: the packaged rule-based backbone (not a generative model) + drawn/espeak."""
    argv = [
        sys.executable,
        "-m",
        "omnieval.benchmarks.storybench.rule_backbone",
        "{input_dir}",
        "{output_dir}",
    ]
    third = {"image": {"name": "drawn", "size": 64}} if expert == "image" else {"speech": {"name": "espeak"}}
    config = _config(produces, {"kind": "command", "argv": argv, "timeout_s": 60}, **third)
    summary = _generate(config, storybench_instances[:2], tmp_path, "semi-rules")
    assert summary.lineage["generation"]["completeness"]["missing"] == {}, summary.lineage["generation"]
    for index in (0, 1):
        for modality in Modality.TEXT, Modality.IMAGE, Modality.SPEECH:
            assert read_candidate(tmp_path / "semi-rules", modality, index).present
    assert summary.lineage["label"].startswith(
        "command omnieval.benchmarks.storybench.rule_backbone backbone"
    )
