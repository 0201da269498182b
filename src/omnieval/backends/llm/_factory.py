"""Backend registry: the config's ``kind`` names the factory. Heavy imports happen inside factories.

Built-in kinds are registered here; a kind another distribution adds answers through the
:class:`~omnieval.backends.llm._plugins.LlmBackendKind` it registered (:mod:`._plugins`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from omnieval.backends.llm._config import (
    BUILTIN_BACKEND_KINDS,
    BackendConfig,
    GeminiBackendConfig,
    LlamaCppConfig,
    LlamaCppServerConfig,
    OpenAIBackendConfig,
    TransformersConfig,
    VllmServerConfig,
)
from omnieval.backends.llm._identity import hf_identity, local_identity
from omnieval.backends.llm._plugins import (
    LLM_BACKEND_KINDS,
    BackendFactory,
    IdentityFn,
    LlmBackendKind,
    PluginBackendConfig,
)
from omnieval.backends.llm._types import BackendUnavailable, ChatBackend, ModelIdentity
from omnieval.registry import Registry

LLM_BACKENDS: Registry[BackendFactory] = Registry("llm backend")
_IDENTITIES: dict[str, IdentityFn] = {}


def _identity(kind: str) -> Callable[[IdentityFn], IdentityFn]:
    def deco(fn: IdentityFn) -> IdentityFn:
        _IDENTITIES[kind] = fn
        return fn

    return deco


@LLM_BACKENDS.register("openai")
def _openai(config: OpenAIBackendConfig, model: str, revision: str) -> ChatBackend:
    from omnieval.backends.llm._endpoints import open_openai_backend

    return open_openai_backend(config, model=model, revision=revision)


@LLM_BACKENDS.register("vllm")
def _vllm(config: VllmServerConfig, model: str, revision: str) -> ChatBackend:
    from omnieval.backends.llm._vllm import ManagedVllmBackend

    return ManagedVllmBackend(config, model=model, revision=revision)


@LLM_BACKENDS.register("gemini")
def _gemini(config: GeminiBackendConfig, model: str, revision: str) -> ChatBackend:
    from omnieval.backends.llm._gemini import GeminiChatBackend

    return GeminiChatBackend(config, model=model, revision=revision)


@LLM_BACKENDS.register("llamacpp")
def _llamacpp(config: LlamaCppConfig, model: str, revision: str) -> ChatBackend:
    from omnieval.backends.llm._llamacpp import LlamaCppChatBackend

    return LlamaCppChatBackend(config, model=model, revision=revision)


@LLM_BACKENDS.register("llamacpp-server")
def _llamacpp_server(config: LlamaCppServerConfig, model: str, revision: str) -> ChatBackend:
    from omnieval.backends.llm._llamacpp_server import ServedLlamaCppBackend

    return ServedLlamaCppBackend(config, model=model, revision=revision)


@LLM_BACKENDS.register("transformers")
def _transformers(config: TransformersConfig, model: str, revision: str) -> ChatBackend:
    from omnieval.backends.llm._transformers import TransformersChatBackend

    return TransformersChatBackend(config, model=model, revision=revision)


@_identity("vllm")
def _hf_identity(config: VllmServerConfig, model: str, revision: str) -> ModelIdentity:
    # omnieval starts this server itself from the local hub cache: the cache names its weights.
    return hf_identity(model, revision)


@_identity("openai")
def _served_identity(config: OpenAIBackendConfig, model: str, revision: str) -> ModelIdentity:
    # A server started elsewhere is asked what it serves (GET /models); with several endpoints,
    # every one that answers must serve the same model, or the judge's answers would mix models.
    from omnieval.backends.llm._identity import served_identity

    addresses = (
        [e.base_url or os.environ.get(e.base_url_env or "", "") for e in config.endpoints]
        if config.endpoints
        else [config.base_url or os.environ.get(config.base_url_env or "", "")]
    )
    if not all(addresses):
        raise BackendUnavailable(f"no server address for {model}: set base_url or its environment variable")
    found: list[ModelIdentity] = []
    failures: list[str] = []
    for address in addresses:
        try:
            found.append(
                served_identity(
                    address,
                    model=model,
                    served_model=config.served_model,
                    revision=revision,
                    api_key_env=config.api_key_env,
                    timeout_s=min(30.0, config.timeout_s),
                )
            )
        except BackendUnavailable as exc:
            failures.append(str(exc))
    if not found:
        raise BackendUnavailable("; ".join(failures))
    if any(other != found[0] for other in found[1:]):
        names = sorted({f"{i.model}@{i.revision}" if i.revision else i.model for i in found})
        raise BackendUnavailable(f"the endpoints of {model} serve different models: {', '.join(names)}")
    return found[0]


@_identity("gemini")
def _gemini_identity(config: GeminiBackendConfig, model: str, revision: str) -> ModelIdentity:
    # A hosted alias moves to new weights without notice: the version the API reports is the
    # revision (one small request per process and model; BackendUnavailable without key or API).
    from omnieval.backends.llm._gemini import gemini_identity

    return gemini_identity(config, model, revision)


@_identity("llamacpp")
def _gguf_identity(config: LlamaCppConfig, model: str, revision: str) -> ModelIdentity:
    from omnieval.backends.llm._llamacpp import gguf_identity

    return gguf_identity(config, model, revision)


@_identity("llamacpp-server")
def _served_gguf_identity(config: LlamaCppServerConfig, model: str, revision: str) -> ModelIdentity:
    # omnieval starts this server itself on a local GGUF: the file names its weights.
    from omnieval.backends.llm._llamacpp import gguf_identity

    return gguf_identity(LlamaCppConfig(model_path=config.model_path), model, revision)


@_identity("transformers")
def _tf_identity(config: TransformersConfig, model: str, revision: str) -> ModelIdentity:
    if config.model_path:
        return local_identity(model, revision, config.model_path)
    return hf_identity(model, revision)


def register_llm_backend(kind: str, backend: LlmBackendKind) -> LlmBackendKind:
    """Register another distribution's ``backend`` as ``kind`` (its entry point's module calls this
    when imported; see :mod:`omnieval.backends.llm._plugins`).

    Raises:
        ValueError: ``kind`` is built in, the config class's ``kind`` default is not ``kind``, or
            another backend holds the name.
    """
    if kind in BUILTIN_BACKEND_KINDS:
        raise ValueError(f"llm backend kind {kind!r} is built in; a plugin cannot replace it")
    declared = backend.config.model_fields["kind"].default
    if declared != kind:
        # Dumps carry the class's kind: another name would validate them back to another class.
        raise ValueError(f"{backend.config.__name__}.kind defaults to {declared!r}, not {kind!r}")
    return LLM_BACKEND_KINDS.register(kind)(backend)


def _plugin(config: BackendConfig) -> LlmBackendKind | None:
    """The registered kind behind a plugin's config; None for a built-in config."""
    if isinstance(config, PluginBackendConfig):
        return LLM_BACKEND_KINDS.get(config.kind)
    return None


def open_backend(config: BackendConfig, *, model: str, revision: str = "") -> ChatBackend:
    """Load the model behind ``config`` (start a server, read weights...). Close it when done."""
    plugin = _plugin(config)
    if plugin is not None:
        return plugin.open(config, model, revision)
    return LLM_BACKENDS.get(config.kind)(config, model, revision)


def backend_identity(config: BackendConfig, *, model: str, revision: str = "") -> ModelIdentity:
    """Identity of the weights behind ``config`` *without loading them* (cache keys, lineage)."""
    plugin = _plugin(config)
    if plugin is not None:
        return plugin.identity(config, model, revision)
    return _IDENTITIES[config.kind](config, model, revision)


def reports_value_probs(config: BackendConfig, *, schema_constrained: bool, greedy: bool) -> bool:
    """Whether answers from ``config`` carry :attr:`Completion.value_probs` for schema integers.

    llama.cpp does with its ``skeleton`` decoder (greedy requests under a fixed-shape schema), where
    the decoder reads the model's full next-token distribution at every value (served: the top
    log-probabilities the server returns); a plugin's kind does
    when it says so. Other backends report none (their judge rows get no probability-weighted
    companion).
    """
    if isinstance(config, LlamaCppConfig | LlamaCppServerConfig):
        return config.constrained_decoding == "skeleton" and schema_constrained and greedy
    plugin = _plugin(config)
    if plugin is not None:
        return plugin.reports_value_probs(config, schema_constrained, greedy)
    return False


def answers_depend_on_call_order(config: BackendConfig) -> bool:
    """Whether an answer from ``config`` can depend on the calls made before it in the same process.

    llama.cpp one request at a time does not: every request's prompt is evaluated in the same
    batches whatever the cache held (``_llamacpp.PROMPT_CHUNK``). Its lockstep decoding
    (``parallel_sequences > 1``) does: which requests share a decode changes the rounding.
    transformers is kept here: sampling without a seed draws from torch's process-wide generator,
    and no run has checked that its answers survive being split over processes. Server backends
    answer each request on its own as far as this process can tell.
    """
    if isinstance(config, LlamaCppConfig):
        return config.parallel_sequences > 1
    if isinstance(config, TransformersConfig):
        return True
    plugin = _plugin(config)
    if plugin is not None:
        return plugin.answers_depend_on_call_order(config)
    return False


def carries_video_audio(config: BackendConfig) -> bool:
    """Whether video parts sent through ``config`` reach the model with their own soundtrack.

    Gemini decodes a video's audio track itself; a vLLM omni model does when the request asks for it
    (``use_audio_in_video``). Elsewhere a caller that wants the model to hear a clip must send its
    sound as a separate audio part.
    """
    if isinstance(config, GeminiBackendConfig):
        return True
    if isinstance(config, OpenAIBackendConfig | VllmServerConfig):
        return config.use_audio_in_video
    plugin = _plugin(config)
    if plugin is not None:
        return plugin.carries_video_audio(config)
    return False


def output_fingerprint(config: BackendConfig) -> dict[str, Any]:
    """Backend settings that change what the model answers (not speed): part of every cache key."""
    out: dict[str, Any] = {"kind": config.kind}
    if isinstance(config, LlamaCppConfig):
        out["constrained_decoding"] = config.constrained_decoding
        out["chat_format"] = config.chat_format
        if config.skeleton_text_sentences is not None:
            out["skeleton_text_sentences"] = config.skeleton_text_sentences
        if config.parallel_sequences > 1:
            # Lockstep batches round differently from one-at-a-time decoding: other answers.
            out["parallel_sequences"] = config.parallel_sequences
    elif isinstance(config, LlamaCppServerConfig):
        out["constrained_decoding"] = config.constrained_decoding
        out["chat_format"] = config.chat_format
        out["schema_field"] = config.schema_field
        out["top_logprobs"] = config.top_logprobs
        if config.skeleton_text_sentences is not None:
            out["skeleton_text_sentences"] = config.skeleton_text_sentences
    elif isinstance(config, OpenAIBackendConfig | VllmServerConfig):
        out["schema_field"] = config.schema_field
        out["vllm_extensions"] = config.vllm_extensions
        if config.use_audio_in_video:
            # The model hears each video's own soundtrack: other inputs, other answers. Keyed only
            # when on, so the keys of configs without it stay as they were.
            out["use_audio_in_video"] = True
    elif isinstance(config, GeminiBackendConfig):
        out["api_version"] = config.api_version
    elif isinstance(config, TransformersConfig):
        out["dtype"] = config.dtype
        out["model_class"] = config.model_class
    else:
        plugin = _plugin(config)
        if plugin is not None:
            out.update(plugin.output_settings(config))
    return out
