"""LLM backends behind one chat interface: text, images and audio in; text or schema-constrained JSON out.

Backends (registered by config ``kind``): ``openai`` (any OpenAI-compatible server: vLLM, hosted
APIs), ``gemini`` (Google's Gemini API through the google-genai SDK), ``vllm`` (omnieval starts and stops ``vllm serve`` from a separate environment), ``llamacpp``
(GGUF in-process, the packaged CPU judge), ``transformers`` (small local checkpoints) and
``scripted`` (plumbing tests). Heavy runtimes are imported only when a backend is opened.
"""

from __future__ import annotations

from omnieval.backends.llm._config import (
    BackendConfig,
    EndpointConfig,
    EndpointHealthSettings,
    FaultsConfig,
    GeminiBackendConfig,
    HttpClientSettings,
    LlamaCppConfig,
    OpenAIBackendConfig,
    ScriptedConfig,
    SimulatedConfig,
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
    reports_value_probs,
)
from omnieval.backends.llm._faults import request_digest
from omnieval.backends.llm._identity import local_identity
from omnieval.backends.llm._llamacpp import resolve_model_path
from omnieval.backends.llm._openai import message_payload, redact_url
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
    "LLM_BACKENDS",
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
    "FaultsConfig",
    "GeminiBackendConfig",
    "HttpClientSettings",
    "ImagePart",
    "LlamaCppConfig",
    "Message",
    "ModelIdentity",
    "OpenAIBackendConfig",
    "Part",
    "ScriptedConfig",
    "SimulatedConfig",
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
    "reports_value_probs",
    "request_digest",
    "resolve_model_path",
    "usage_table",
]
