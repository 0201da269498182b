"""LLM backends behind one chat interface: text, images and audio in; text or schema-constrained JSON out.

Backends (registered by config ``kind``): ``openai`` (any OpenAI-compatible server: vLLM, hosted
APIs), ``gemini`` (Google's Gemini API through the google-genai SDK), ``vllm`` (omnieval starts and stops ``vllm serve`` from a separate environment), ``llamacpp``
(GGUF in-process, the packaged CPU judge), ``llamacpp-server`` (the same GGUF behind llama.cpp's
OpenAI-compatible server, which omnieval starts and stops) and ``transformers`` (small local checkpoints). Other
installed distributions add kinds through the ``omnieval.llm_backends`` entry points
(:func:`register_llm_backend`; the test kit's ``scripted``, ``simulated`` and ``faults``). Heavy
runtimes are imported only when a backend is opened.
"""

from __future__ import annotations

from omnieval.backends.llm._config import (
    BUILTIN_BACKEND_KINDS,
    BackendConfig,
    EndpointConfig,
    EndpointHealthSettings,
    GeminiBackendConfig,
    HttpClientSettings,
    LlamaCppConfig,
    LlamaCppServerConfig,
    OpenAIBackendConfig,
    TransformersConfig,
    VllmServerConfig,
)
from omnieval.backends.llm._factory import (
    LLM_BACKENDS,
    answers_depend_on_call_order,
    backend_identity,
    carries_video_audio,
    open_backend,
    output_fingerprint,
    register_llm_backend,
    reports_value_probs,
)
from omnieval.backends.llm._identity import local_identity
from omnieval.backends.llm._llamacpp import resolve_model_path
from omnieval.backends.llm._openai import message_payload, redact_url
from omnieval.backends.llm._plugins import LLM_BACKEND_KINDS, LlmBackendKind, PluginBackendConfig
from omnieval.backends.llm._types import (
    AudioPart,
    BackendError,
    BackendUnavailable,
    ChatBackend,
    ChatRequest,
    Completion,
    Decoding,
    ImagePart,
    Message,
    ModelIdentity,
    Part,
    SequentialChatMixin,
    TextPart,
    TransientBackendError,
    UnsupportedInput,
    VideoPart,
)
from omnieval.backends.llm._usage import (
    USAGE_FIELDS,
    TokenPrice,
    Usage,
    merge_usage_json,
    usage_table,
)

__all__ = [
    "BUILTIN_BACKEND_KINDS",
    "LLM_BACKENDS",
    "LLM_BACKEND_KINDS",
    "USAGE_FIELDS",
    "AudioPart",
    "BackendConfig",
    "BackendError",
    "BackendUnavailable",
    "ChatBackend",
    "ChatRequest",
    "Completion",
    "Decoding",
    "EndpointConfig",
    "EndpointHealthSettings",
    "GeminiBackendConfig",
    "HttpClientSettings",
    "ImagePart",
    "LlamaCppConfig",
    "LlamaCppServerConfig",
    "LlmBackendKind",
    "Message",
    "ModelIdentity",
    "OpenAIBackendConfig",
    "Part",
    "PluginBackendConfig",
    "SequentialChatMixin",
    "TextPart",
    "TokenPrice",
    "TransformersConfig",
    "TransientBackendError",
    "UnsupportedInput",
    "Usage",
    "VideoPart",
    "VllmServerConfig",
    "answers_depend_on_call_order",
    "backend_identity",
    "carries_video_audio",
    "local_identity",
    "merge_usage_json",
    "message_payload",
    "open_backend",
    "output_fingerprint",
    "redact_url",
    "register_llm_backend",
    "reports_value_probs",
    "resolve_model_path",
    "usage_table",
]
