"""The ``cascade`` kind (OmniACBench): what it reads per condition, what it renders, how plans fail.

The planner is scripted (``backends/llm`` ``kind: scripted``): :func:`plan_script` answers from
:data:`ANSWERS` and keeps every request in :data:`REQUESTS`. ASR (packaged Whisper tiny.en) and
espeak-ng run for real. One slow test asks the packaged Qwen planner for two plans.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from omnieval.backends.llm import ChatRequest, TextPart
from omnieval.benchmarks import get_benchmark
from omnieval.benchmarks.acbench import NOT_EVALUATED, AcBench
from omnieval.benchmarks.acbench._cascade import IMAGE_NOT_SEEN, CascadeConfig, CascadeSystem
from omnieval.benchmarks.acbench._record import AcbenchInstance, load_acbench
from omnieval.systems import SYSTEMS, GenerationRequest, PlanningFailure, SystemSpec, config_model

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data" / "acbench-sample"

#: Script text (as in the user prompt) -> the scripted planner's answer; "*" for every other.
ANSWERS: dict[str, str] = {}
#: Every request the scripted planner received, in order.
REQUESTS: list[ChatRequest] = []

PLAIN = {"rate": 2, "whisper": 0, "gender": 1, "age": 1, "pitch": 2, "accent": 1}


def plan_script(request: ChatRequest) -> str:
    """The scripted planner: the answer registered for the request's script line."""
    REQUESTS.append(request)
    text = user_text(request)
    for script, answer in ANSWERS.items():
        if script != "*" and f"Script: {script}" in text:
            return answer
    return ANSWERS.get("*", json.dumps(PLAIN))


def user_text(request: ChatRequest) -> str:
    return "\n".join(p.text for p in request.messages[-1].parts if isinstance(p, TextPart))


@pytest.fixture(autouse=True)
def _fresh_script() -> Iterator[None]:
    ANSWERS.clear()
    REQUESTS.clear()
    yield
    ANSWERS.clear()
    REQUESTS.clear()


@pytest.fixture(scope="module")
def sample() -> Path:
    if (SAMPLE / "manifest.jsonl").is_file():
        return SAMPLE
    pytest.skip("data/acbench-sample is not restored (make setup restores it)")


@pytest.fixture(scope="module")
def instances(sample: Path) -> dict[str, AcbenchInstance]:
    return {inst.id: inst for inst in load_acbench(sample).instances}


def scripted_config(**extra: Any) -> CascadeConfig:
    return CascadeConfig.model_validate(
        {
            "kind": "cascade",
            "planner": {
                "model": "scripted-planner",
                "backend": {"kind": "scripted", "script": f"{__name__}:plan_script"},
            },
            **extra,
        }
    )


def run(
    config: CascadeConfig,
    chosen: Sequence[AcbenchInstance],
    out: Path,
    cache: Path,
    condition: str,
) -> Any:
    system = CascadeSystem(config, system_id="cascade-test", cache_dir=cache)
    return system.generate(
        GenerationRequest(
            list(chosen), out, visible=AcBench().visible_task, modalities=("speech",), condition=condition
        )
    )


def raw(out: Path, index: int) -> dict[str, Any]:
    return dict(json.loads((out / "raw" / str(index) / "generated_raw.json").read_text(encoding="utf-8")))


def speech_span_s(path: Path) -> float:
    from omnieval.audio import prepare_speech

    return float(prepare_speech(path).trimmed.shape[0]) / 16_000


def test_registered_with_a_typed_config() -> None:
    assert SYSTEMS.get("cascade") is CascadeSystem
    assert config_model("cascade") is CascadeConfig
    assert "cascade" in get_benchmark("acbench").system_kinds
    with pytest.raises(ValueError, match="planer"):
        CascadeConfig.model_validate({"kind": "cascade", "planer": {}})
    spec = scripted_config()
    assert isinstance(spec, SystemSpec) and spec.model_config.get("frozen")


def test_plan_is_rendered_rate_and_whisper(instances: dict[str, AcbenchInstance], tmp_path: Path) -> None:
    """The same script spoken as planned: fast vs slow differ in words per minute on the WAV, and a
    whispered plan measures a low voiced-frame ratio."""
    from omnieval.audio import prepare_speech
    from omnieval.metrics.functional.pitch import pyin_f0

    inst = instances["ac-0001"]
    n_words = len(inst.script.split())
    wpm: dict[str, float] = {}
    for label, code in (("fast", 3), ("slow", 1)):
        ANSWERS["*"] = json.dumps({**PLAIN, "rate": code})
        out = tmp_path / label
        summary = run(scripted_config(), [inst], out, tmp_path / f"cache-{label}", "all_to_t")
        assert summary.lineage["generation"]["planning_failures"] == {}
        assert raw(out, inst.index)["delivery"]["labels"]["rate"] == label
        wpm[label] = 60.0 * n_words / speech_span_s(out / "speech" / str(inst.index) / "generated.wav")
    assert wpm["fast"] > 1.6 * wpm["slow"], wpm

    vfr: dict[bool, float] = {}
    for whisper in (False, True):
        ANSWERS["*"] = json.dumps({**PLAIN, "whisper": int(whisper)})
        out = tmp_path / f"whisper-{whisper}"
        run(scripted_config(), [inst], out, tmp_path / f"cache-w{whisper}", "all_to_t")
        speech = prepare_speech(out / "speech" / str(inst.index) / "generated.wav")
        vfr[whisper] = pyin_f0(speech.trimmed, sr=16_000).voiced_frame_ratio
    assert vfr[True] <= 0.3 < vfr[False], vfr


def test_heteronym_reading_is_offered_and_rendered(
    instances: dict[str, AcbenchInstance], tmp_path: Path
) -> None:
    inst = instances["ac-0007"]  # "Please hand me the lead."
    ANSWERS["*"] = json.dumps({**PLAIN, "reading": 2})
    out = tmp_path / "out"
    run(scripted_config(), [inst], out, tmp_path / "cache", "all_to_t")
    request = REQUESTS[0]
    assert "'lead' has two readings" in user_text(request)
    assert request.json_schema is not None and request.json_schema["properties"]["reading"]["enum"] == [1, 2]
    facts = raw(out, inst.index)["delivery"]
    assert facts["labels"]["reading"] == "metal" and "[[l'Ed]]" in facts["how"]


@pytest.mark.parametrize(
    ("answer", "cause"),
    [
        ("rate fast, whisper no", PlanningFailure.UNPARSEABLE_JSON),
        (json.dumps({k: v for k, v in PLAIN.items() if k != "rate"}), PlanningFailure.MISSING_FIELD),
        (json.dumps({**PLAIN, "rate": 7}), PlanningFailure.MISSING_FIELD),
        ("I'm sorry, but I can't help with voice instructions.", PlanningFailure.REFUSAL),
    ],
)
def test_planning_failures_are_classified(
    instances: dict[str, AcbenchInstance], tmp_path: Path, answer: str, cause: PlanningFailure
) -> None:
    good, bad = instances["ac-0001"], instances["ac-0003"]
    ANSWERS[bad.script] = answer
    out = tmp_path / "out"
    summary = run(scripted_config(), [good, bad], out, tmp_path / "cache", "s_to_t")
    generation = summary.lineage["generation"]
    assert generation["planning_failures"] == {cause.value: 1}
    assert generation["completeness"]["missing"] == {"speech": 1}
    assert (out / "speech" / str(good.index) / "generated.wav").is_file()
    reason = (out / "speech" / str(bad.index) / "missing.txt").read_text(encoding="utf-8")
    assert reason.startswith(f"planning failure: {cause.value}")
    facts = raw(out, bad.index)
    assert facts["planning_failure"] == cause.value and facts["planner_output"] == answer
    assert set(generation["seconds"]) == {"plan", "speech"}  # text instruction: no ASR step


def test_each_condition_shows_what_it_gives_and_never_the_target(
    instances: dict[str, AcbenchInstance], tmp_path: Path
) -> None:
    """Spoken conditions: the ASR transcript; text conditions: the text; the picture is not seen
    (no vision backend) but its keywords are; the target only as the oracle's statement."""
    inst = instances["ac-0001"]  # speech_rate = fast
    prompts: dict[str, str] = {}
    facts: dict[str, dict[str, Any]] = {}
    for condition in ("original", "s_to_t", "i_to_t", "all_to_t", "oracle"):
        out = tmp_path / condition
        summary = run(scripted_config(), [inst], out, tmp_path / "cache", condition)
        prompts[condition] = user_text(REQUESTS[-1])
        facts[condition] = raw(out, inst.index)
        assert summary.lineage["inputs"]["seen"]["script"] == 1
        assert len(REQUESTS[-1].messages[-1].parts) == 1  # text only: no image part
    words = re.findall(r"[a-z]+", inst.instruction_text.lower())
    for condition in ("original", "i_to_t"):
        heard = facts[condition]["inputs_seen"]["instruction_audio"]["transcript"]
        assert f"Instruction (spoken, as transcribed): {heard}" in prompts[condition]
        # Whisper tiny.en on espeak-ng speech is not perfect ("at the pace" -> "to my face").
        assert sum(w in heard.lower() for w in words) >= 0.5 * len(words), heard
        assert inst.instruction_text not in prompts[condition] or heard == inst.instruction_text
    for condition in ("s_to_t", "all_to_t", "oracle"):
        assert f"Instruction (written): {inst.instruction_text}" in prompts[condition]
        assert "instruction_audio" not in facts[condition]["inputs_seen"]
    for condition in ("original", "s_to_t"):
        assert facts[condition]["inputs_not_seen"] == {"image": IMAGE_NOT_SEEN}
        assert "Picture: none available" in prompts[condition]
        assert not any(k in prompts[condition] for k in inst.image_keywords)
    for condition in ("i_to_t", "all_to_t", "oracle"):
        assert all(k in prompts[condition] for k in inst.image_keywords)
    for condition, prompt in prompts.items():
        if condition == "oracle":
            assert "Stated delivery: Deliver the script with speech rate = fast." in prompt
        else:
            assert inst.target_value not in prompt and "Stated delivery" not in prompt
    # The transcript of the same instruction was cached by audio content: Whisper ran once.
    assert facts["original"]["inputs_seen"]["instruction_audio"]["from_cache"] is False
    assert facts["i_to_t"]["inputs_seen"]["instruction_audio"]["from_cache"] is True


def test_rerun_reuses_examples_and_limit_marks_rows_not_evaluated(
    instances: dict[str, AcbenchInstance], tmp_path: Path
) -> None:
    from omnieval.benchmarks.acbench._metrics import _not_evaluated

    chosen = [instances["ac-0002"], instances["ac-0001"], instances["ac-0003"]]
    config = scripted_config(limit=2)
    first = run(config, chosen, tmp_path / "a", tmp_path / "cache", "all_to_t")
    calls = len(REQUESTS)
    assert calls == 2 and first.lineage["generation"]["examples_generated"] == 2
    assert first.lineage["subset"] == {"limit": 2, "evaluated": 2, "of": 3, "not_evaluated": ["ac-0003"]}
    left = tmp_path / "a" / "speech" / str(instances["ac-0003"].index) / "missing.txt"
    assert left.read_text(encoding="utf-8").startswith(NOT_EVALUATED)
    assert _not_evaluated(tmp_path / "a", instances["ac-0003"].index)
    assert not _not_evaluated(tmp_path / "a", instances["ac-0001"].index)
    second = run(config, chosen, tmp_path / "b", tmp_path / "cache", "all_to_t")
    assert len(REQUESTS) == calls  # nothing planned again
    assert second.lineage["generation"]["examples_reused"] == 2
    assert second.lineage["inputs"] == first.lineage["inputs"]


@pytest.mark.slow
def test_real_qwen_planner_follows_the_stated_delivery(
    instances: dict[str, AcbenchInstance], tmp_path: Path
) -> None:
    """The packaged Qwen2.5-Coder-1.5B (llama.cpp, skeleton decoding) plans two oracle examples."""
    import yaml

    suite = yaml.safe_load((ROOT / "pipelines" / "acbench.yaml").read_text(encoding="utf-8"))
    config = CascadeConfig.model_validate({**suite["systems"]["cascade-cpu"], "limit": None})
    fast, whisper = instances["ac-0001"], instances["ac-0005"]
    out = tmp_path / "out"
    summary = run(config, [fast, whisper], out, tmp_path / "cache", "oracle")
    assert summary.lineage["generation"]["planning_failures"] == {}
    assert raw(out, fast.index)["delivery"]["labels"]["rate"] == "fast"
    assert raw(out, whisper.index)["delivery"]["labels"]["whisper"] is True
    assert all((out / "speech" / str(i.index) / "generated.wav").is_file() for i in (fast, whisper))
