"""The ``semi-orchestration`` kind with a scripted backbone: the backbone's narration is the text
output, the image and the spoken line are derived from it, and backbone failures remove all three."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from omnieval.backends.llm import ChatRequest
from omnieval.benchmarks.storybench._brief import speaker_emotion
from omnieval.candidates import Modality, read_candidate
from omnieval.systems import GenerationRequest
from omnieval.systems.semi_orchestration import (
    SemiOrchestrationConfig,
    SemiOrchestrationSystem,
)

#: index -> the backbone's answer (others get the default narration).
ANSWERS = {
    1: "I'm sorry, but I cannot continue this story.",
    2: "The end.",
}
DEFAULT = 'Pip lifted the lantern high. "Follow the light!" he called, and the mice came running.'


def backbone_script(request: ChatRequest) -> str:
    prompt = "".join(p.text for m in request.messages for p in m.parts if hasattr(p, "text"))
    assert "JSON" not in prompt.split("Scene:")[-1]  # plain text is asked for, not a plan
    for index, key in _KEYS.items():
        if key in " ".join(prompt.split()):
            return ANSWERS.get(index, DEFAULT)
    raise AssertionError("unknown example")


_KEYS: dict[int, str] = {}


@pytest.fixture
def run(storybench_instances: tuple[Any, ...], tmp_path: Path) -> dict[str, Any]:
    from omnieval.benchmarks import get_benchmark

    bench = get_benchmark("storybench")
    instances = storybench_instances[:4]
    _KEYS.clear()
    _KEYS.update({i.index: " ".join(i.current_text.split())[:80] for i in instances})
    config = SemiOrchestrationConfig.model_validate(
        {
            "kind": "semi-orchestration",
            "backbone": {
                "model": "scripted",
                "backend": {"kind": "scripted", "script": f"{__name__}:backbone_script"},
            },
            "image": {"name": "drawn", "size": 64},
            "speech": {"name": "espeak", "controlled_rate": False},
            "voice_gender": "male",
        }
    )
    system = SemiOrchestrationSystem(config, system_id="semi", cache_dir=tmp_path / "cache")
    summary = system.generate(
        GenerationRequest(
            instances, tmp_path / "out", visible=bench.visible_task, modalities=bench.modalities
        )
    )
    return {"out": tmp_path / "out", "summary": summary, "instances": instances}


def test_backbone_text_and_expert_outputs(run: dict[str, Any]) -> None:
    out, inst = run["out"], run["instances"]
    for index in (0, 3):
        assert (out / "text" / str(index) / "generated.txt").read_text(encoding="utf-8").strip() == DEFAULT
        for modality in (Modality.IMAGE, Modality.SPEECH):
            assert read_candidate(out, modality, index).present
        raw = json.loads((out / "raw" / str(index) / "generated_raw.json").read_text(encoding="utf-8"))
        assert raw["speech_plan"]["text"] == "Follow the light!"
        assert raw["speech_plan"]["gender"] == "male"
        assert raw["speech_plan"]["emotion"] == speaker_emotion(inst[index].task_inputs())
        assert raw["image_prompt"].endswith("Pip lifted the lantern high.")
        assert raw["image_prompt"].startswith(inst[index].condition.scene.strip().rstrip(".")[:30])
        assert raw["image_expert"]["drawn"]["characters"] == ["Pip"]


def test_backbone_failures_remove_all_outputs_and_are_counted(run: dict[str, Any]) -> None:
    out = run["out"]
    block = run["summary"].lineage["generation"]
    assert block["planning_failures"] == {"refusal": 1, "missing_field": 1}
    assert block["completeness"]["missing"] == {"text": 2, "image": 2, "speech": 2}
    for index, cause in ((1, "refusal"), (2, "missing_field")):
        for modality in (Modality.TEXT, Modality.IMAGE, Modality.SPEECH):
            assert not read_candidate(out, modality, index).present
            reason = (out / modality.value / str(index) / "missing.txt").read_text(encoding="utf-8")
            assert reason.startswith(f"planning failure: {cause}")
    assert set(block["seconds"]) == {"backbone", "text", "image", "speech"}
    lineage = run["summary"].lineage
    assert lineage["paradigm"] == "semi-orchestration" and lineage["backbone"]["produces"] == ["text"]
    # One backbone call per example; the scripted backbone reports no tokens (unknown, not 0).
    assert lineage["usage"]["calls"] == len(run["instances"]) and lineage["usage"]["prompt_tokens"] is None
