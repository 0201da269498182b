"""The Gemini backend against a local server speaking the Gemini REST wire format.

The real google-genai SDK builds and sends every request (its base URL points at the local
server), so these tests check what goes over the wire: parts in order with their MIME types, a
video's own soundtrack inside the MP4 it sends, the JSON schema as structured output, the key as a
header; and what comes back: text, usage, finish reason, the served model version as identity.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from gemini_stub_server import MODEL_VERSION, GeminiStub, gemini_server, has_audio_stream, inline_media
from PIL import Image

from omnieval.backends.llm import (
    AudioPart,
    BackendError,
    BackendUnavailable,
    ChatRequest,
    Decoding,
    GeminiBackendConfig,
    ImagePart,
    Message,
    TextPart,
    TransientBackendError,
    UnsupportedInput,
    Usage,
    VideoPart,
    backend_identity,
    carries_video_audio,
    open_backend,
    output_fingerprint,
)
from omnieval.backends.llm._gemini import GeminiChatBackend, forget_versions

MODEL = "gemini-test-pro"
SCHEMA = {
    "type": "object",
    "properties": {
        "lip_sync": {
            "type": "object",
            "properties": {"score": {"type": "integer"}, "evidence": {"type": "string", "maxLength": 80}},
            "required": ["score", "evidence"],
        }
    },
    "required": ["lip_sync"],
}


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A one-second MP4 with a 440 Hz soundtrack, a WAV and a PNG."""
    root = tmp_path_factory.mktemp("gemini-media")
    video = root / "clip.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-f", "lavfi",
         "-i", "sine=frequency=440:sample_rate=16000", "-t", "1", "-c:v", "libx264", "-pix_fmt",
         "yuv420p", "-c:a", "aac", "-shortest", str(video)],
        check=True,
    )  # fmt: skip
    wav = root / "tone.wav"
    sf.write(wav, 0.1 * np.sin(np.linspace(0, 2 * np.pi * 220, 8000)).astype("float32"), 8000)
    png = root / "card.png"
    Image.new("RGB", (8, 8), (200, 10, 10)).save(png)
    return {"video": video, "wav": wav, "png": png}


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiStub]:
    key = "AIza" + secrets.token_hex(16)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", key)
    forget_versions()
    with gemini_server(key) as stub:
        yield stub
    forget_versions()


def _config(stub: GeminiStub, **extra: object) -> GeminiBackendConfig:
    return GeminiBackendConfig(base_url=stub.url, **extra)  # type: ignore[arg-type]


def _request(media: dict[str, Path]) -> ChatRequest:
    return ChatRequest(
        messages=(
            Message.text_only("system", "You are a strict audio-visual judge."),
            Message(
                "user",
                (
                    TextPart("Clip 1:"),
                    VideoPart(media["video"]),
                    TextPart("A reference tone:"),
                    AudioPart(media["wav"]),
                    ImagePart(media["png"]),
                    TextPart("Score the lip sync."),
                ),
            ),
        ),
        decoding=Decoding(temperature=0.0, seed=3, max_tokens=256),
        json_schema=SCHEMA,
    )


def test_video_with_its_sound_image_and_audio_go_inline_and_json_comes_back(
    server: GeminiStub, media: dict[str, Path], tmp_path: Path
) -> None:
    config = _config(server)
    backend = open_backend(config, model=MODEL)
    try:
        completion = backend.chat(_request(media))
        identity = backend.identity()
    finally:
        backend.close()

    # The identity probe (no media) came first; then one judge request.
    assert [r.path for r in server.generate_requests()] == [f"/v1beta/models/{MODEL}:generateContent"] * 2
    sent = server.judge_requests()
    assert len(sent) == 1
    body = sent[0].body
    user = body["contents"]
    assert [c["role"] for c in user] == ["user"]  # the system text travels apart
    assert body["systemInstruction"]["parts"][0]["text"] == "You are a strict audio-visual judge."
    parts = user[0]["parts"]
    assert [p.get("text") for p in parts if "text" in p] == [
        "Clip 1:",
        "A reference tone:",
        "Score the lip sync.",
    ]
    kinds = [mime for mime, _ in inline_media(body)]
    assert kinds == ["video/mp4", "audio/x-wav", "image/png"] or kinds == [
        "video/mp4",
        "audio/wav",
        "image/png",
    ]
    video_bytes = inline_media(body)[0][1]
    assert video_bytes == media["video"].read_bytes()
    assert has_audio_stream(video_bytes, tmp_path)  # the soundtrack rides inside the video part
    generation = body["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseJsonSchema"] == SCHEMA
    assert generation["temperature"] == 0.0 and generation["seed"] == 3
    assert generation["maxOutputTokens"] == 256 and "candidateCount" not in generation  # the API's default
    assert "topP" not in generation  # unset: not sent (test_decoding_sent.py covers every field)

    assert json.loads(completion.text) == {"lip_sync": {"score": 7, "evidence": "heard and seen"}}
    assert completion.finish_reason == "stop"
    assert completion.prompt_tokens == 1200
    assert completion.completion_tokens == 40 + 60  # answer plus thinking tokens (billed as output)
    usage = Usage()
    usage.add_call(completion, completion.latency_s)
    assert usage.to_json()["prompt_tokens"] == 1200 and usage.to_json()["completion_tokens"] == 100
    assert identity.model == MODEL and identity.revision == MODEL_VERSION
    assert server.unauthorized == 0


def test_identity_is_the_served_version_probed_once_per_process(server: GeminiStub) -> None:
    config = _config(server)
    first = backend_identity(config, model=MODEL)
    again = backend_identity(config, model=MODEL)
    assert first.revision == again.revision == MODEL_VERSION
    assert len(server.generate_requests()) == 1
    probe = server.generate_requests()[0].body
    assert probe["generationConfig"]["maxOutputTokens"] <= 16  # costs next to nothing
    with pytest.raises(BackendUnavailable, match="pins version 'gemini-older'"):
        backend_identity(config, model=MODEL, revision="gemini-older")
    assert backend_identity(config, model=MODEL, revision=MODEL_VERSION).revision == MODEL_VERSION
    # The version is keyed apart from output settings, and audio always travels inside the video.
    assert output_fingerprint(config) == {"kind": "gemini", "api_version": "v1beta"}
    assert carries_video_audio(config)


def test_an_answer_from_another_version_is_refused(server: GeminiStub, media: dict[str, Path]) -> None:
    backend = GeminiChatBackend(_config(server), model=MODEL)
    try:
        server.model_version = "gemini-stub-002"
        with pytest.raises(BackendError, match="answered by version 'gemini-stub-002'") as info:
            backend.chat(_request(media))
        assert not info.value.transient
    finally:
        backend.close()


def test_quota_and_server_errors_are_transient_and_sent_once(
    server: GeminiStub, media: dict[str, Path]
) -> None:
    backend = GeminiChatBackend(_config(server), model=MODEL)
    try:
        before = len(server.generate_requests())
        server.fail_next = [429, 503, 400]
        results = backend.chat_many([_request(media)] * 4)
    finally:
        backend.close()
    assert isinstance(results[0], TransientBackendError) and "HTTP 429" in str(results[0])
    assert isinstance(results[1], TransientBackendError) and "HTTP 503" in str(results[1])
    assert isinstance(results[2], BackendError) and not results[2].transient
    assert not isinstance(results[3], BackendError)
    # The SDK did not retry on its own: one request per call (resends are the judge runner's).
    assert len(server.generate_requests()) - before == 4


def test_without_a_key_the_backend_is_unavailable_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    config = GeminiBackendConfig(base_url="http://127.0.0.1:9/")
    with pytest.raises(BackendUnavailable, match=r"set \$GOOGLE_API_KEY or \$GEMINI_API_KEY"):
        backend_identity(config, model=MODEL)
    with pytest.raises(BackendUnavailable, match=r"\$MY_GEMINI_CRED"):
        open_backend(GeminiBackendConfig(api_key_env="MY_GEMINI_CRED"), model=MODEL)


def test_an_unreachable_server_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza" + secrets.token_hex(16))
    forget_versions()
    config = GeminiBackendConfig(base_url="http://127.0.0.1:9/", timeout_s=5)
    with pytest.raises(BackendUnavailable, match="cannot reach"):
        backend_identity(config, model=MODEL)


def test_vllm_only_sampling_fields_are_refused(server: GeminiStub) -> None:
    backend = GeminiChatBackend(_config(server), model=MODEL)
    try:
        request = ChatRequest((Message.text_only("user", "hi"),), decoding=Decoding(repetition_penalty=1.1))
        with pytest.raises(UnsupportedInput, match="repetition_penalty"):
            backend.chat(request)
    finally:
        backend.close()
