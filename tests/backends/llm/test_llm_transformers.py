"""The transformers backend on a tiny randomly initialised Llama built in the test (no downloads)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from omnieval.backends.llm import (
    BackendUnavailable,
    ChatRequest,
    Decoding,
    ImagePart,
    Message,
    TextPart,
    TransformersConfig,
    UnsupportedInput,
    open_backend,
)

WORDS = 'you judge the story score rationale alignment good bad fox owl lantern system user assistant : { } " , 1 2 3'


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-llama")
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    for word in WORDS.split():
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
    fast.chat_template = (
        "{% for m in messages %}<s> {{ m['role'] }} : {{ m['content'] }} </s> {% endfor %}"
        "{% if add_generation_prompt %}<s> assistant :{% endif %}"
    )
    fast.save_pretrained(path)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    LlamaForCausalLM(config).save_pretrained(path)
    return path


def _request(text: str = "you judge the story", **decoding: object) -> ChatRequest:
    messages = (Message.text_only("system", "you judge"), Message.text_only("user", text))
    return ChatRequest(messages=messages, decoding=Decoding(**decoding))  # type: ignore[arg-type]


def test_greedy_generation_from_chat_template(tiny_checkpoint: Path) -> None:
    backend = open_backend(
        TransformersConfig(model_path=str(tiny_checkpoint), dtype="float32"), model="tiny/llama"
    )
    try:
        first = backend.chat(_request(temperature=0.0, max_tokens=6))
        second = backend.chat(_request(temperature=0.0, max_tokens=6))
        assert first.text == second.text  # greedy decoding is deterministic
        assert 1 <= (first.completion_tokens or 0) <= 6
        rendered = backend.tokenizer.apply_chat_template(  # type: ignore[attr-defined]
            [{"role": "system", "content": "you judge"}, {"role": "user", "content": "you judge the story"}],
            add_generation_prompt=True,
            tokenize=True,
        )
        ids = rendered["input_ids"] if hasattr(rendered, "keys") else rendered
        assert first.prompt_tokens == len(ids)
        sampled = backend.chat(_request(max_tokens=6, temperature=1.0, seed=3))
        again = backend.chat(_request(max_tokens=6, temperature=1.0, seed=3))
        assert sampled.text == again.text  # the seed makes sampling reproducible
    finally:
        backend.close()


def test_identity_hashes_local_weights(tiny_checkpoint: Path) -> None:
    from omnieval.backends.llm import backend_identity

    identity = backend_identity(
        TransformersConfig(model_path=str(tiny_checkpoint)), model="tiny/llama", revision="r1"
    )
    weights = tiny_checkpoint / "model.safetensors"
    assert identity.weights_sha256 == {"model.safetensors": hashlib.sha256(weights.read_bytes()).hexdigest()}
    assert identity.revision == "r1"


def test_text_only_checkpoint_rejects_media(tiny_checkpoint: Path, tmp_path: Path) -> None:
    from PIL import Image

    image = tmp_path / "x.png"
    Image.new("RGB", (4, 4)).save(image)
    backend = open_backend(
        TransformersConfig(model_path=str(tiny_checkpoint), dtype="float32"), model="tiny/llama"
    )
    try:
        request = ChatRequest(messages=(Message("user", (TextPart("look"), ImagePart(image))),))
        with pytest.raises(UnsupportedInput):
            backend.chat(request)
        (result,) = backend.chat_many([request])
        assert isinstance(result, UnsupportedInput)
    finally:
        backend.close()


def test_missing_checkpoint_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BackendUnavailable, match="not found"):
        open_backend(TransformersConfig(model_path=str(tmp_path / "none")), model="tiny/llama")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(BackendUnavailable, match="local Hugging Face cache"):
        open_backend(TransformersConfig(), model="nvidia/audio-flamingo-next-hf")
