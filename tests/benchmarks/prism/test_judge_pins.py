"""PRISM's judge output pinned byte for byte: cache keys, judgments and scores rows, lineage.

Recorded from ``prism/_judge.py`` before its runner moved onto the judges' shared one (issue 41):
the same inputs must give the same cache keys (else every stored answer is a miss), the same
judgments table and the same rows. The scripted judge covers every path of a call: a clean answer,
a format slip read locally, a repaired answer, an unrecoverable one, an empty one, an inference
error, a missing candidate, the swap check, and both input kinds (measured facts; blinded clips).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omnieval.backends.llm import BackendError, ChatBackend, ChatRequest, Completion, ModelIdentity
from omnieval.backends.llm._types import SequentialChatMixin
from omnieval.benchmarks.prism._judge import PrismJudgeResult, PrismPanelConfig, judge_prism
from omnieval.benchmarks.prism._record import candidate_video
from omnieval.benchmarks.prism._tracks import ComposeConfig
from omnieval.judges import JudgeConfig
from omnieval.judges._render import Framing
from omnieval_testkit import ScriptedConfig

from ._clips import clicks, make_clip, tone


@dataclass(frozen=True)
class Inst:
    id: str
    index: int
    subset: str
    active_tags: tuple[str, ...]
    caption: str
    reference_video: Path


def _fill(schema: Mapping[str, Any], score: Callable[[str], int], path: str = "") -> Any:
    props = schema["properties"]
    if "score" in props:
        return {"score": score(path), "evidence": f"heard {path.replace('.', ' ')}"}
    return {k: _fill(sub, score, f"{path}.{k}" if path else k) for k, sub in props.items()}


def _good(request: ChatRequest) -> str:
    """A complete answer whose scores follow the request's bytes (so slot order shows in the rows)."""
    assert request.json_schema is not None
    seed = hashlib.sha256(request.messages[-1].text.encode()).digest()
    return json.dumps(_fill(request.json_schema, lambda p: (seed[0] + len(p) * (2 if "_1" in p else 1)) % 11))


PATH_BYTE = 2


def judge_script(request: ChatRequest) -> str:
    """Each distinct request takes one path, chosen by its bytes."""
    good = _good(request)
    path = hashlib.sha256(request.messages[-1].text.encode()).digest()[PATH_BYTE] % 7
    if path == 1:
        return "Here it is: " + good.replace('"', "'")  # a slip read locally
    if path in (2, 6):
        return f"BROKEN{path} " + good.replace("{", "(").replace("}", ")")  # repaired / invented
    if path == 3:
        return "I liked both clips, roughly a seven."  # unrecoverable
    if path == 4:
        return ""  # empty
    if path == 5:
        raise BackendError("server said no")
    return good


def repair_script(request: ChatRequest) -> str:
    text = request.messages[-1].text
    found = re.search(r"BROKEN([26]) (\(.*\))", text, re.S)
    if found is None:
        return json.dumps({"unrecoverable": True})
    fixed = found.group(2).replace("(", "{").replace(")", "}")
    return (
        fixed
        if found.group(1) == "2"
        else re.sub(r'"evidence": "[^"]*"', '"evidence": "made up"', fixed, count=1)
    )


class Scripted(SequentialChatMixin):
    def __init__(self, script: Callable[[ChatRequest], str], name: str) -> None:
        self.script, self.name = script, name

    def identity(self) -> ModelIdentity:
        return ModelIdentity(model=self.name, revision="1")

    def chat(self, request: ChatRequest) -> Completion:
        return Completion(text=self.script(request), finish_reason="stop", latency_s=0.01)

    def close(self) -> None:
        return None


def _judge(judge_id: str) -> JudgeConfig:
    return JudgeConfig(
        id=judge_id,
        model=judge_id,
        revision="1",
        backend=ScriptedConfig(script="json:dumps"),
        framing=Framing(schema_constrained=True),
        retries=0,
    )


def _factory(judge: JudgeConfig) -> ChatBackend:
    return (
        Scripted(repair_script, "fake-repair")
        if judge.id == "fake-repair"
        else Scripted(judge_script, "fake")
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Inst], dict[str, Path]]:
    root = tmp_path_factory.mktemp("prism-pins")
    events = [0.4, 1.0, 1.6]
    ref0 = make_clip(root / "ref" / "a.mp4", duration=2.0, events=events, audio=clicks(events, 2.0))
    ref1 = make_clip(root / "ref" / "b.mp4", duration=2.0, audio=tone(330, 2.0))
    instances = [
        Inst("on-x", 0, "on_screen", ("SOUND_A",), "A hammer knocks three times.", ref0),
        Inst("mix-x", 1, "mixed", ("MUSIC_A", "SOUND_B"), "A xylophone plays while rain falls.", ref1),
    ]
    systems: dict[str, Path] = {}
    for name in ("sysA", "ground-truth", "partial"):
        systems[name] = root / "cands" / name
        for inst in instances:
            if name == "partial" and inst.index == 1:
                continue
            out = candidate_video(systems[name], inst.index)
            out.parent.mkdir(parents=True, exist_ok=True)
            if name == "ground-truth":
                out.write_bytes(inst.reference_video.read_bytes())
            else:
                make_clip(out, duration=2.0, audio=tone(550 if name == "sysA" else 440, 2.0))
    return root, instances, systems


def _digest(result: PrismJudgeResult, root: Path) -> dict[str, Any]:
    def text(frame: Any) -> str:
        out: str = frame.to_json(orient="records", double_precision=15)
        return out.replace(str(root).replace("/", "\\/"), "<root>")

    lineage = {k: v for k, v in result.lineage.items() if k not in ("seconds", "usage", "usage_by_system")}
    usage = [
        {j: {k: v for k, v in u.items() if k != "seconds"} for j, u in table.items()}
        for table in [result.lineage["usage"], *result.lineage["usage_by_system"].values()]
    ]
    return {
        "keys": sorted(set(result.judgments["cache_key"]) - {""}),
        "judgments": hashlib.sha256(text(result.judgments).encode()).hexdigest(),
        "scores": hashlib.sha256(text(result.scores).encode()).hexdigest(),
        "lineage": hashlib.sha256(json.dumps(lineage, sort_keys=True).encode()).hexdigest(),
        "tags": hashlib.sha256(json.dumps(result.mlflow_tags, sort_keys=True).encode()).hexdigest(),
        "rest": [result.model_calls, result.cache_hits, result.swap, result.unavailable, usage],
    }


def run_cascade(world: tuple[Path, list[Inst], dict[str, Path]], cache: Path) -> dict[str, Any]:
    root, instances, systems = world
    panel = PrismPanelConfig(
        name="pin-cascade",
        judge_kind="cascade",
        requires="a fake model",
        judges=(_judge("fake-judge"),),
        repair=_judge("fake-repair"),
    )
    result = judge_prism(
        instances, systems, panel=panel, cache_dir=cache, seed=5, swap_check=True, backend_factory=_factory
    )
    return _digest(result, root)


def run_native(world: tuple[Path, list[Inst], dict[str, Path]], cache: Path, media: str) -> dict[str, Any]:
    root, instances, systems = world
    panel = PrismPanelConfig(
        name=f"pin-native-{media}",
        judge_kind="native",
        requires="a fake model",
        judges=(_judge("fake-judge"),),
        compose=ComposeConfig(media=media, soundtracks=True, width=64, height=48, fps=8),  # type: ignore[arg-type]
    )
    result = judge_prism(
        instances[:1],
        {"sysA": systems["sysA"]},
        panel=panel,
        cache_dir=cache,
        seed=3,
        backend_factory=_factory,
    )
    return _digest(result, root)


CASCADE: dict[str, Any] = {
    "keys": [
        "2ab8b6548d23bfa66f96a3b48d717fd17e57839b211a30cdff6309834954e4e7",
        "3ed24179a8179a51c49726a685ffaf7d7e041202feaf8ce2f4dfbff0cae76b4a",
        "470a1e9f7f4e33ffa17fc576b93f4913ff9b213a408cf5bf20af23899267b39b",
        "98df7685cefe1bbc473377eaf965ca0699baaf0d1b4f13702d13e411889d9abb",
        "9cfe8d99b08599e7cacc3acea9c6d10ea1099082032da3ecbc0939612a74f88c",
        "ac9792e7e0e2a61328063c4e59eee2a68997fa2ecc1cb02d6f23475dbe340cfc",
        "cdd5dbe684cde11428d36b1a5342cc16b33114ae4a5221f8cbe68cad9e72f839",
        "e00d12551e3eae8eeffae7343cb6b82d070130da5a161d850315917f31e750b1",
    ],
    "judgments": "be0a063ca763657b40209cd38f35895ced56191a9eae67a20968f4022a50ebc1",
    "scores": "af926eadcece4f0c44f24e415843af6c9ca0da021b7506a4d942e2672e71f0de",
    "lineage": "0f1e8e00a7f6c346caac7d2c245b56c43193fafe196057eb561dc2c9fe4d25ca",
    "tags": "245b89aaf02909fa724b39ccbad71a06f61ba35141aa9ba27473de6cd72efdd1",
    "rest": [
        26,
        0,
        {
            "stage_1": {
                "cells": 4,
                "flips": 4,
                "flip_rate": 1.0,
                "strict_flips": 4,
                "strict_flip_rate": 1.0,
                "first_slot_wins": 0.0,
            },
            "stage_2": {
                "cells": 4,
                "flips": 4,
                "flip_rate": 1.0,
                "strict_flips": 4,
                "strict_flip_rate": 1.0,
                "first_slot_wins": 0.5,
            },
        },
        [],
        [
            {
                "fake-judge": {
                    "calls": 20,
                    "cached_calls": 0,
                    "prompt_tokens": None,
                    "completion_tokens": None,
                    "calls_with_tokens": 0,
                },
                "fake-repair": {
                    "calls": 6,
                    "cached_calls": 0,
                    "prompt_tokens": None,
                    "completion_tokens": None,
                    "calls_with_tokens": 0,
                },
            },
            {
                "fake-judge": {
                    "calls": 8,
                    "cached_calls": 0,
                    "prompt_tokens": None,
                    "completion_tokens": None,
                    "calls_with_tokens": 0,
                },
                "fake-repair": {
                    "calls": 2,
                    "cached_calls": 0,
                    "prompt_tokens": None,
                    "completion_tokens": None,
                    "calls_with_tokens": 0,
                },
            },
            {
                "fake-judge": {
                    "calls": 4,
                    "cached_calls": 0,
                    "prompt_tokens": None,
                    "completion_tokens": None,
                    "calls_with_tokens": 0,
                },
                "fake-repair": {
                    "calls": 2,
                    "cached_calls": 0,
                    "prompt_tokens": None,
                    "completion_tokens": None,
                    "calls_with_tokens": 0,
                },
            },
            {
                "fake-judge": {
                    "calls": 8,
                    "cached_calls": 0,
                    "prompt_tokens": None,
                    "completion_tokens": None,
                    "calls_with_tokens": 0,
                },
                "fake-repair": {
                    "calls": 2,
                    "cached_calls": 0,
                    "prompt_tokens": None,
                    "completion_tokens": None,
                    "calls_with_tokens": 0,
                },
            },
        ],
    ],
}
NATIVE: dict[str, dict[str, Any]] = {
    "separate": {
        "keys": [
            "ac15636f3ededb53075954a35757230599e04a10bddc29c22196c1400c8ac545",
            "e5b9a788190c7a6b6d16da703aba0b60c25f516eb9e9b0384f7a91e72d3f7b8c",
        ],
        "judgments": "364344286f435f9686ad0c557033000c0e33c2f225961d9ab9cb57211a33c7d9",
        "scores": "00f87e9199b6d99dec0efbef427993ffd2cb1e0605f795e974d6b2ed467ad585",
        "lineage": "addf3aee6179e48ca85d1567d74c19f434671dc5ac39c91abcc2775fa2feb162",
        "tags": "cb7e7592ffcdde3817aeaeeaf4ce642fbf5c730ceae4e4d60beea17eeda19e1b",
        "rest": [
            2,
            0,
            None,
            [],
            [
                {
                    "fake-judge": {
                        "calls": 2,
                        "cached_calls": 0,
                        "prompt_tokens": None,
                        "completion_tokens": None,
                        "calls_with_tokens": 0,
                    }
                },
                {
                    "fake-judge": {
                        "calls": 2,
                        "cached_calls": 0,
                        "prompt_tokens": None,
                        "completion_tokens": None,
                        "calls_with_tokens": 0,
                    }
                },
            ],
        ],
    },
    "pair": {
        "keys": [
            "1cc44594a86796c78e2675c2d8729db9c619f3fc9659e2ec848e7e69684cffd8",
            "f9c765a16eac60336b21e7bd25d2ed9ca912b9404b42845d4c772267df8d3614",
        ],
        "judgments": "d88c389cdcf5ad983a02ec0d7e405de310ffa53fd02c0274be6aa32fbc5da6c1",
        "scores": "84f505f2fde6550e3ac16ca1e320f106465c1621527bfb01b542dbb69b37232b",
        "lineage": "c177662663523d5747241f6c36fd0c2a93200c9b59ab5cb1970324d45fd90957",
        "tags": "defb0aa43a87d2a6198060f5695c59405a1d9d75c4cc00356211757594f5496b",
        "rest": [
            2,
            0,
            None,
            [],
            [
                {
                    "fake-judge": {
                        "calls": 2,
                        "cached_calls": 0,
                        "prompt_tokens": None,
                        "completion_tokens": None,
                        "calls_with_tokens": 0,
                    }
                },
                {
                    "fake-judge": {
                        "calls": 2,
                        "cached_calls": 0,
                        "prompt_tokens": None,
                        "completion_tokens": None,
                        "calls_with_tokens": 0,
                    }
                },
            ],
        ],
    },
}


def test_cascade_judging_is_pinned(world: tuple[Path, list[Inst], dict[str, Path]], tmp_path: Path) -> None:
    first = run_cascade(world, tmp_path / "cache")
    assert first == CASCADE
    # A second run answers every stored call from the cache (only the inference errors are sent again).
    again = run_cascade(world, tmp_path / "cache")
    assert again["keys"] == first["keys"] and again["rest"][:2] == [10, 16]


@pytest.mark.parametrize("media", ["separate", "pair"])
def test_native_judging_is_pinned(
    world: tuple[Path, list[Inst], dict[str, Path]], tmp_path: Path, media: str
) -> None:
    assert run_native(world, tmp_path / "cache", media) == NATIVE[media]
