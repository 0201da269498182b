"""PRISM judging with the sound inside the video: the ``paper`` panel against a local Gemini-format
server and the ``omni`` panel against a local OpenAI-compatible (vLLM-like) server.

Each run judges one instance of the shipped PRISM sample through :func:`judge_prism` with the real
backends (no injected model), so what the servers record is what a hosted Gemini or a vLLM server
would receive: the two blinded clips as MP4 video parts that still carry their soundtrack, and no
separate audio part.
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "backends" / "llm"))  # the shared stub servers
from gemini_stub_server import MODEL_VERSION, GeminiStub, gemini_server, has_audio_stream, inline_media
from gemini_stub_server import schema_answer as fill_schema
from llm_stub_server import Recorded, Reply, StubServer, completion

from omnieval.backends.llm._gemini import forget_versions
from omnieval.benchmarks.prism._judge import judge_prism, load_prism_panel
from omnieval.benchmarks.prism._record import candidate_video, load_prism

INSTANCE = "on-01"  # speech on screen: lip sync is judged from the video's own soundtrack


@pytest.fixture(scope="module")
def one_pair(
    prism_sample: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[Any], dict[str, Path]]:
    """The sample's ``on-01`` and a system whose clip is the reference itself (loaded once: reading
    the sample checks every clip)."""
    inst = next(i for i in load_prism(prism_sample).instances if i.id == INSTANCE)
    root = tmp_path_factory.mktemp("prism-video-sound") / "gt"
    out = candidate_video(root, inst.index)
    out.parent.mkdir(parents=True)
    shutil.copyfile(inst.reference_video, out)
    return [inst], {"ground-truth": root}


@pytest.fixture()
def gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiStub]:
    key = "AIza" + secrets.token_hex(16)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", key)
    forget_versions()
    with gemini_server(key) as stub:
        monkeypatch.setenv("OMNIEVAL_GEMINI_URL", stub.url)
        yield stub
    forget_versions()


def test_paper_panel_sends_each_clip_with_its_sound_to_gemini(
    one_pair: tuple[list[Any], dict[str, Path]], gemini: GeminiStub, tmp_path: Path
) -> None:
    instances, candidates = one_pair
    cache = tmp_path / "cache"
    result = judge_prism(instances, candidates, panel="paper", cache_dir=cache)

    assert result.unavailable == []
    assert set(result.judgments.status) == {"ok"} and result.model_calls == 2  # two stages
    assert result.scores.value.notna().all() and set(result.scores.value) == {7.0}
    sent = gemini.judge_requests()
    assert len(sent) == 2 and gemini.unauthorized == 0
    for request in sent:
        assert request.path == "/v1beta/models/gemini-3.1-pro-preview:generateContent"
        media = inline_media(request.body)
        assert [mime for mime, _ in media] == ["video/mp4", "video/mp4"]  # no separate audio part
        assert all(has_audio_stream(data, tmp_path) for _, data in media)
        assert "responseJsonSchema" in request.body["generationConfig"]
    judge = result.lineage["judges"]["gemini-3.1-pro-preview"]
    assert judge["revision"] == MODEL_VERSION  # the version the API reported
    assert set(result.judgments.revision) == {MODEL_VERSION}
    assert result.lineage["usage"]["gemini-3.1-pro-preview"]["prompt_tokens"] == 2 * 1200

    # A rerun (a fresh process: the version is probed again) answers every call from the cache.
    forget_versions()
    again = judge_prism(instances, candidates, panel="paper", cache_dir=cache)
    assert again.model_calls == 0 and again.cache_hits == 2
    assert len(gemini.judge_requests()) == 2
    # A new served version is a new identity: the cached answers of the old one are not reused.
    forget_versions()
    gemini.model_version = "gemini-stub-002"
    moved = judge_prism(instances, candidates, panel="paper", cache_dir=cache)
    assert moved.model_calls == 2 and moved.cache_hits == 0
    assert set(moved.judgments.revision) == {"gemini-stub-002"}


def test_paper_panel_without_a_key_is_unavailable_and_unscored(
    one_pair: tuple[list[Any], dict[str, Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    forget_versions()
    instances, candidates = one_pair
    result = judge_prism(instances, candidates, panel="paper", cache_dir=tmp_path)
    assert result.model_calls == 0
    assert set(result.scores.status) == {"not_applicable"} and result.scores.value.isna().all()
    assert len(result.unavailable) == 1
    assert "paper/gemini-3.1-pro-preview: unavailable" in result.unavailable[0]
    assert "$GOOGLE_API_KEY or $GEMINI_API_KEY" in result.unavailable[0]
    assert not (tmp_path / "prism_media").exists()


def _video_parts(body: dict[str, Any]) -> list[bytes]:
    out = []
    for message in body["messages"]:
        if isinstance(message["content"], list):
            for part in message["content"]:
                if part["type"] == "video_url":
                    url = part["video_url"]["url"]
                    assert url.startswith("data:video/mp4;base64,")
                    out.append(base64.b64decode(url.split(",", 1)[1]))
    return out


def _part_types(body: dict[str, Any]) -> set[str]:
    return {p["type"] for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]}


class VllmOmniStub:
    """An OpenAI-compatible server that answers PRISM stage calls in the schema it is sent."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []

    def respond(self, request: Recorded) -> Reply:
        self.requests.append(request)
        schema = request.body["structured_outputs"]["json"]
        return completion(json.dumps(fill_schema(schema)))


def test_omni_panel_asks_vllm_to_hear_each_videos_own_soundtrack(
    one_pair: tuple[list[Any], dict[str, Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    instances, candidates = one_pair
    stub = VllmOmniStub()
    with StubServer(stub.respond) as server:
        monkeypatch.setenv("OMNIEVAL_PRISM_OMNI_URL", server.url)
        result = judge_prism(instances, candidates, panel="omni", cache_dir=tmp_path / "cache")
    assert result.unavailable == [] and set(result.judgments.status) == {"ok"}
    assert result.model_calls == 2 and set(result.scores.value) == {7.0}
    assert len(stub.requests) == 2
    for request in stub.requests:
        assert request.path == "/v1/chat/completions"
        assert request.body["mm_processor_kwargs"] == {"use_audio_in_video": True}
        assert "input_audio" not in _part_types(request.body)  # the sound rides inside the videos
        videos = _video_parts(request.body)
        assert len(videos) == 2 and all(has_audio_stream(v, tmp_path) for v in videos)


def test_without_use_audio_in_video_the_soundtracks_still_travel_apart(
    one_pair: tuple[list[Any], dict[str, Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that cannot decode a video's audio gets each clip's sound as an audio part, as before."""
    panel = load_prism_panel("omni")
    judge = panel.judges[0]
    plain = judge.model_copy(
        update={"backend": judge.backend.model_copy(update={"use_audio_in_video": False})}
    )
    panel = panel.model_copy(
        update={
            "judges": (plain,),
            "repair": plain,
            "compose": panel.compose.model_copy(update={"soundtracks": True}),
        }
    )
    instances, candidates = one_pair
    stub = VllmOmniStub()
    with StubServer(stub.respond) as server:
        monkeypatch.setenv("OMNIEVAL_PRISM_OMNI_URL", server.url)
        result = judge_prism(instances, candidates, panel=panel, cache_dir=tmp_path / "cache")
    assert set(result.judgments.status) == {"ok"} and len(stub.requests) == 2
    for request in stub.requests:
        assert "mm_processor_kwargs" not in request.body
        assert {"video_url", "input_audio"} <= _part_types(request.body)
