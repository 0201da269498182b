"""Storybench and PRISM rows judged in one process, each on its own registered tracks, with scripted
judges (the ``scripted`` backend kind), and the bytes that reach the judge pinned.

Each benchmark registers its tracks when ``omnieval.benchmarks`` is imported; neither refuses the
other's. The pinned cache keys and prompt hashes were recorded before the tracks were kept per
benchmark: a different key would be a cache miss on every stored answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import yaml
from judge_fixtures import NARRATIONS, Story, fake_describe
from tests.benchmarks.prism._clips import clicks, make_clip, tone

from omnieval.backends.llm import ChatRequest
from omnieval.benchmarks.prism._judge import PrismPanelConfig, judge_prism
from omnieval.benchmarks.prism._prompts import template_sha256
from omnieval.benchmarks.prism._record import candidate_video
from omnieval.judges import JudgeConfig, run_judges, track_benchmarks, tracks_of
from omnieval.judges._render import Framing
from omnieval_testkit import ScriptedConfig

PRISM_SCORE = 6


class Clip(NamedTuple):
    """What judge_prism reads of a PRISM row (its ``PrismInstanceLike``)."""

    id: str
    index: int
    subset: str
    active_tags: tuple[str, ...]
    caption: str
    reference_video: Path


def prism_stage_answer(request: ChatRequest) -> str:
    """A scripted PRISM judge: every cell its schema asks for, for both clips, scored 6 with evidence."""

    def fill(schema: dict[str, Any]) -> Any:
        props = schema["properties"]
        if "score" in props:
            return {"score": PRISM_SCORE, "evidence": "steady clicks"}
        return {key: fill(sub) for key, sub in props.items()}

    assert request.json_schema is not None
    return json.dumps(fill(request.json_schema))


def _prism_panel() -> PrismPanelConfig:
    judge = JudgeConfig(
        id="scripted-prism",
        model="scripted/prism",
        revision="1",
        backend=ScriptedConfig(script=f"{__name__}:prism_stage_answer"),
        framing=Framing(schema_constrained=True),
        retries=0,
    )
    return PrismPanelConfig(
        name="scripted-cascade", judge_kind="cascade", requires="a scripted model", judges=(judge,)
    )


def _prism_row(root: Path) -> tuple[Clip, dict[str, Path]]:
    """One on-screen sound clip with its reference, and one system's candidate for it."""
    events = [0.4, 1.0, 1.6]
    reference = make_clip(root / "ref" / "a.mp4", duration=2.0, events=events, audio=clicks(events, 2.0))
    clip = Clip("on-x", 0, "on_screen", ("SOUND_A",), "A hammer knocks three times.", reference)
    candidate = candidate_video(root / "cands" / "sysA", clip.index)
    candidate.parent.mkdir(parents=True)
    make_clip(candidate, duration=2.0, audio=tone(550, 2.0))
    return clip, {"sysA": root / "cands" / "sysA"}


def story_panel(folder: Path) -> Path:
    """A storybench panel of scripted judges (``judge_scripts:by_reference``): text and the speech
    cascade judged, image unavailable. Every decoding setting is stated, so what is sent (and the
    cache key) does not follow the defaults."""
    judge = {
        "id": "scripted-judge",
        "model": "scripted/by_reference",
        "backend": {"kind": "scripted", "script": "judge_scripts:by_reference"},
        "decoding": {
            "temperature": 0.0,
            "top_p": 1.0,
            "repetition_penalty": 1.0,
            "seed": 0,
            "max_tokens": 128,
        },
        "framing": {"schema_constrained": True},
        "retries": 0,
        "batch_size": 2,
    }
    panel = {
        "name": "scripted",
        "tracks": {
            "text": {"judges": [judge]},
            "speech": {"input": "cascade", "judges": [judge]},
            "image": {"unavailable": "no vision model in tests"},
        },
    }
    path = folder / "story-panel.yaml"
    path.write_text(yaml.safe_dump(panel), encoding="utf-8")
    return path


def _own_tracks_only(scores: pd.DataFrame, benchmark: str) -> None:
    assert set(scores["benchmark"]) == {benchmark}
    tracks = tracks_of(benchmark)
    for track_name, criterion in scores[["track", "criterion"]].drop_duplicates().itertuples(index=False):
        assert criterion in tracks.track(str(track_name)).criteria, (benchmark, track_name, criterion)


def story_keys(judgments: pd.DataFrame) -> dict[str, list[str]]:
    """Per judged storybench record: its prompt hash and cache key (what reaches the judge)."""
    ok = judgments[judgments["status"] == "ok"].sort_values(["track", "instance_id", "system"])
    return {
        f"{r.track}/{r.instance_id}/{r.system}": [str(r.prompt_sha256), str(r.cache_key)]
        for r in ok.itertuples(index=False)
    }


# Recorded before the tracks were kept per benchmark (the same run: story_panel, the oracle and
# shuffled systems of judge_fixtures' story, fake_describe for the speech cascade).
STORY_KEYS = {
    "speech/test/lantern/p00__p01/oracle": [
        "b03bd2741c57621007a5187f939a521949595fad7faf70cfb24f8b1ea841204d",
        "f0670118d6e135ebc2f4b013d35c0b75c594b3661d496c0594bcb2e912c002a0",
    ],
    "speech/test/lantern/p00__p01/shuffled": [
        "b03bd2741c57621007a5187f939a521949595fad7faf70cfb24f8b1ea841204d",
        "f0670118d6e135ebc2f4b013d35c0b75c594b3661d496c0594bcb2e912c002a0",
    ],
    "speech/test/lantern/p01__p02/oracle": [
        "b03bd2741c57621007a5187f939a521949595fad7faf70cfb24f8b1ea841204d",
        "e48eab048c4b4fbb500c8c612b79414592d4bc25ebf5a776066afc28a07c3a01",
    ],
    "speech/test/lantern/p01__p02/shuffled": [
        "b03bd2741c57621007a5187f939a521949595fad7faf70cfb24f8b1ea841204d",
        "e48eab048c4b4fbb500c8c612b79414592d4bc25ebf5a776066afc28a07c3a01",
    ],
    "speech/test/lantern/p02__p03/oracle": [
        "b03bd2741c57621007a5187f939a521949595fad7faf70cfb24f8b1ea841204d",
        "3d79a0f54f4820dd1753d722b256a2f69113d17ec2c1372880b3671e86ef61a2",
    ],
    "speech/test/lantern/p02__p03/shuffled": [
        "b03bd2741c57621007a5187f939a521949595fad7faf70cfb24f8b1ea841204d",
        "3d79a0f54f4820dd1753d722b256a2f69113d17ec2c1372880b3671e86ef61a2",
    ],
    "text/test/lantern/p00__p01/oracle": [
        "7aabbb2576bfdf7f6f7464658e6e6232fe104bc5b4e78d13089eb5b5869e555d",
        "d4a5293a2f781f23ee20530d281e9ec65135c94768e45c6361d9c29cfd781e09",
    ],
    "text/test/lantern/p00__p01/shuffled": [
        "7aabbb2576bfdf7f6f7464658e6e6232fe104bc5b4e78d13089eb5b5869e555d",
        "eb889af3075d9a2cc5d66af5b9223cbbffaff59ca3eeec4b2877b881b8a9f7dd",
    ],
    "text/test/lantern/p01__p02/oracle": [
        "7aabbb2576bfdf7f6f7464658e6e6232fe104bc5b4e78d13089eb5b5869e555d",
        "dc4456ec4a720935b2c5e8179f332b59ebcec7d4fcbeb85a13fa40f1ec4770e4",
    ],
    "text/test/lantern/p01__p02/shuffled": [
        "7aabbb2576bfdf7f6f7464658e6e6232fe104bc5b4e78d13089eb5b5869e555d",
        "4e2ad300902d6027c57186d70d672a5ebc66f2ac5aaf77a607fa20777f8e7e9c",
    ],
    "text/test/lantern/p02__p03/oracle": [
        "7aabbb2576bfdf7f6f7464658e6e6232fe104bc5b4e78d13089eb5b5869e555d",
        "c4fda8b57e7b1f6c2aaf2b3a5f6a769c56bb6955dde3b5eaa279cdb6ddc9d92c",
    ],
    "text/test/lantern/p02__p03/shuffled": [
        "7aabbb2576bfdf7f6f7464658e6e6232fe104bc5b4e78d13089eb5b5869e555d",
        "f4f8118c231e35777f9a3b88b296e593465b49f8cde73324afc439f657b7f68a",
    ],
}
PRISM_TEMPLATE_SHA256 = {
    "stage_1": "263c140d812d3b57b815e8d9e81a47390ae0de3e183afec577863b9f4b2af614",
    "stage_2": "e91fafa2dfb0ab04fcc3c1cabdf80010e1b026c5a2d6925ecb1ef909a11f07e6",
}


def test_storybench_and_prism_rows_in_one_process(story: Story, tmp_path: Path) -> None:
    assert {"prism", "storybench"} <= set(track_benchmarks())
    references = [n for _, n in NARRATIONS]
    systems = {
        "oracle": story.candidates("oracle", references),
        "shuffled": story.candidates("shuffled", [references[1], references[2], references[0]]),
    }
    cache = tmp_path / "cache"  # one cache folder for both benchmarks' answers
    panel = str(story_panel(tmp_path))
    stories = run_judges(
        story.transitions, systems, panel=panel, cache_dir=cache, describe_audio=fake_describe
    )
    clip, candidates = _prism_row(tmp_path / "prism")
    prism = judge_prism([clip], candidates, panel=_prism_panel(), cache_dir=cache)
    # Storybench judged again after PRISM, in the same process: every answer comes from the cache.
    again = run_judges(story.transitions, systems, panel=panel, cache_dir=cache, describe_audio=fake_describe)

    _own_tracks_only(stories.scores, "storybench")
    _own_tracks_only(prism.scores, "prism")
    text = stories.scores[stories.scores["track"] == "text"]
    assert (text[text["system"] == "oracle"]["value"] == 9).all()
    assert (text[text["system"] == "shuffled"]["value"] == 2).all()
    speech = stories.scores[stories.scores["track"] == "speech"]
    assert set(speech["status"]) == {"ok"} and (speech["value"] == 6).all()
    assert set(stories.scores[stories.scores["track"] == "image"]["status"]) == {"not_applicable"}

    # PRISM: a system row and a ground-truth row per active cell of both stages, all scored.
    assert set(prism.scores["status"]) == {"ok"} and (prism.scores["value"] == PRISM_SCORE).all()
    cells = set(zip(prism.scores["track"], prism.scores["criterion"], strict=True))
    assert cells == {
        ("av_coherence", "sound"),
        ("audio_quality", "sound"),
        ("expressiveness", "sound"),
        ("prompt_following", "sound"),
    }
    assert set(prism.scores["system"]) == {"sysA", "ground_truth"} and len(prism.scores) == 8

    assert story_keys(stories.judgments) == STORY_KEYS
    assert again.model_calls == 0 and again.cache_hits == stories.model_calls
    assert story_keys(again.judgments) == STORY_KEYS
    assert again.scores.equals(stories.scores)
    prompts = dict(zip(prism.judgments["stage"], prism.judgments["prompt_sha256"], strict=True))
    assert prompts == {stage: template_sha256("cascade", stage) for stage in (1, 2)}
    assert {f"stage_{s}": h for s, h in prompts.items()} == PRISM_TEMPLATE_SHA256
