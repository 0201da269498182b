"""Configuration of the LLM backends (pydantic, frozen, unknown keys rejected).

Secrets never appear here: a config names the *environment variable* that holds an API key
(``api_key_env``), and the key is read only when a request is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from omnieval.backends.llm._plugins import ENTRY_POINT_GROUP, LLM_BACKEND_KINDS, PluginBackendConfig


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


SchemaField = Literal["response_format", "guided_json", "structured_outputs", "json_object"]


class HttpClientSettings(_Strict):
    """How the OpenAI-compatible client talks to a server."""

    timeout_s: float = Field(default=600.0, gt=0)
    """Per-request timeout in seconds (connect and read)."""
    concurrency: int = Field(default=1, ge=1)
    """Requests in flight at once (the paper's max concurrent sequences)."""
    schema_field: SchemaField = "response_format"
    """How a JSON schema is sent: OpenAI ``response_format`` (vLLM, hosted APIs), vLLM's older
    ``guided_json``, vLLM's ``structured_outputs``, or ``json_object``: ``response_format`` of
    type ``json_object`` with the schema beside it, the only form llama-cpp-python's server
    constrains by (it answers a ``json_schema`` format unconstrained, measured with 0.3.36)."""
    vllm_extensions: bool = True
    """Send vLLM's extra sampling fields (repetition_penalty, top_k, stop_token_ids,
    chat_template_kwargs). Turn off for hosted APIs that reject unknown fields."""
    use_audio_in_video: bool = False
    """Ask the server to decode each video part's own soundtrack with its frames: requests that carry
    a video part get ``mm_processor_kwargs: {"use_audio_in_video": true}`` (vLLM's per-request form
    for Qwen2.5-Omni and Qwen3-Omni, whose TMRoPE then aligns the audio with the frames in time).
    Without it vLLM drops a video's audio track, and a caller has to send the sound separately."""


def _no_credentials(url: str | None, field: str) -> None:
    """Refuse ``user:password@`` in a server address: it would be recorded with the config."""
    if url is None:
        return
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ValueError(f"{field}: not a URL: {exc}") from None
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            f"{field}: credentials in the URL would be recorded in the resolved config and MLflow; "
            "give the key through api_key_env instead"
        )


class EndpointConfig(_Strict):
    """One server of a multi-endpoint judge (see :attr:`OpenAIBackendConfig.endpoints`)."""

    base_url: str | None = None
    """Server root, e.g. ``http://gpu-7:8000/v1``; or give ``base_url_env``."""
    base_url_env: str | None = None
    """Environment variable holding the server root (used when ``base_url`` is unset)."""
    weight: float = Field(default=1.0, gt=0)
    """Share of the calls relative to the other endpoints (2 = twice as many as a weight-1 one)."""
    max_concurrency: int | None = Field(default=None, ge=1)
    """Most requests in flight on this endpoint; default: the backend's ``concurrency``."""

    @model_validator(mode="after")
    def _address_without_credentials(self) -> EndpointConfig:
        _no_credentials(self.base_url, "base_url")
        return self


class EndpointHealthSettings(_Strict):
    """Adaptive concurrency and health of the endpoints of a multi-endpoint judge."""

    increase_after: int = Field(default=4, ge=1)
    """Successes in a row after which an endpoint's in-flight limit grows by one."""
    down_after: int = Field(default=3, ge=1)
    """Transient failures in a row after which an endpoint is marked down."""
    cooloff_s: float = Field(default=5.0, ge=0)
    """Seconds a down endpoint rests before one probe request; doubles after a failed probe (up to 8x)."""
    max_attempts: int | None = Field(default=None, ge=1)
    """Attempts per request within one batch, over different endpoints when possible; default: the
    number of endpoints plus one."""
    all_down_wait_s: float = Field(default=30.0, ge=0)
    """Most seconds one batch waits while every endpoint is down; then the waiting requests fail
    with a transient error (the judge runner's retries take over)."""


class OpenAIBackendConfig(HttpClientSettings):
    """An already running OpenAI-compatible server (a vLLM server elsewhere, a hosted API)."""

    kind: Literal["openai"] = "openai"
    base_url: str | None = None
    """Server root, e.g. ``http://gpu-7:8000/v1``; or give ``base_url_env``."""
    base_url_env: str | None = None
    """Environment variable holding the server root (used when ``base_url`` is unset)."""
    served_model: str | None = None
    """Model name the server expects in requests; default: the judge's model id."""
    api_key_env: str | None = None
    """Environment variable holding the API key (sent as a bearer token, never logged)."""
    endpoints: tuple[EndpointConfig, ...] = ()
    """Several servers of the same model: calls are spread over them with adaptive concurrency and
    per-endpoint health (then ``base_url``/``base_url_env`` stay unset)."""
    endpoint_health: EndpointHealthSettings = EndpointHealthSettings()
    """How endpoints back off, grow, go down and come back (only with ``endpoints``)."""

    @model_validator(mode="after")
    def _one_address_form(self) -> OpenAIBackendConfig:
        _no_credentials(self.base_url, "base_url")
        if self.endpoints and (self.base_url or self.base_url_env):
            raise ValueError("give either base_url/base_url_env or endpoints, not both")
        for i, endpoint in enumerate(self.endpoints):
            if not (endpoint.base_url or endpoint.base_url_env):
                raise ValueError(f"endpoints[{i}]: give base_url or base_url_env")
        return self


class VllmServerConfig(HttpClientSettings):
    """A ``vllm serve`` process that omnieval starts from a separate environment, then stops.

    Defaults are the paper's shared settings: bfloat16, tensor parallel 1, 8 GiB swap.
    """

    kind: Literal["vllm"] = "vllm"
    executable: str | None = None
    """The ``vllm`` launcher of the separate vLLM environment; default ``$OMNIEVAL_VLLM_BIN``, else
    ``vllm`` on PATH."""
    dtype: str = "bfloat16"
    tensor_parallel_size: int = Field(default=1, ge=1)
    swap_space_gib: float = Field(default=8, ge=0)
    max_model_len: int | None = Field(default=None, ge=256)
    """Context limit in tokens (8192 text, 20000 image, 32768 integrated...)."""
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    """Maximum concurrent sequences on the server."""
    seed: int | None = None
    """Server-side seed (``--seed``)."""
    trust_remote_code: bool = False
    limit_mm_per_prompt: dict[str, int] = Field(default_factory=dict)
    """Attachments per prompt, e.g. ``{"image": 3, "audio": 1}``."""
    host: str = "127.0.0.1"
    port: int | None = Field(default=None, ge=1, le=65535)
    """Port to serve on; None picks a free one."""
    startup_timeout_s: float = Field(default=1800.0, gt=0)
    """How long to wait for ``/health`` (large checkpoints load slowly)."""
    extra_args: tuple[str, ...] = ()
    """Further ``vllm serve`` arguments, passed as given."""
    api_key_env: str | None = None
    """Environment variable with a key the server should require (passed to it via the environment)."""


class LlamaCppServerConfig(HttpClientSettings):
    """A GGUF model behind llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``),
    started, health-checked, restarted and stopped by omnieval like ``vllm serve``.

    The served twin of :class:`LlamaCppConfig`: the same file and decoding, reached over HTTP.
    Greedy requests under a fixed-shape schema are skeleton-decoded by this process over the
    server's ``/v1/completions`` (the model's greedy tokens and top log-probabilities per
    position); other requests go to ``/v1/chat/completions`` with the schema as a grammar.
    """

    kind: Literal["llamacpp-server"] = "llamacpp-server"
    model_path: str = "packaged:qwen2.5-coder-1.5b-gguf"
    """A GGUF file, or ``packaged:<asset>`` (as for :class:`LlamaCppConfig`)."""
    n_ctx: int = Field(default=4096, ge=256)
    """Context window of the server in tokens."""
    n_batch: int = Field(default=512, ge=8)
    """Most tokens per llama.cpp decode on the server."""
    n_threads: int | None = Field(default=None, ge=1)
    """CPU threads of the server; None picks the cores no other process keeps busy (as in-process)."""
    chat_format: str | None = None
    """llama.cpp chat format; None = the template stored in the GGUF (applied by this process for
    skeleton requests, by the server for the others)."""
    constrained_decoding: Literal["skeleton", "grammar"] = "skeleton"
    """As :attr:`LlamaCppConfig.constrained_decoding`."""
    skeleton_text_sentences: int | None = Field(default=None, ge=1)
    """As :attr:`LlamaCppConfig.skeleton_text_sentences`."""
    top_logprobs: int = Field(default=20, ge=2, le=100)
    """Top log-probabilities asked for per position; the skeleton decoder sees only these tokens
    (20 is the most the OpenAI API and vLLM's default ``--max-logprobs`` give)."""
    python: str | None = None
    """Interpreter that runs ``-m llama_cpp.server``; default: this process's own."""
    host: str = "127.0.0.1"
    port: int | None = Field(default=None, ge=1, le=65535)
    """Port to serve on; None picks a free one."""
    startup_timeout_s: float = Field(default=300.0, gt=0)
    """How long to wait for the server to answer ``GET /v1/models``."""
    max_restarts: int = Field(default=3, ge=0)
    """Times a server that died under a run is started again before its requests fail."""
    extra_args: tuple[str, ...] = ()
    """Further ``llama_cpp.server`` arguments, passed as given."""
    schema_field: SchemaField = "json_object"
    vllm_extensions: bool = False


GEMINI_KEY_VARIABLES: tuple[str, ...] = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
"""Where a Gemini key is looked for when a config names no variable, in the google-genai SDK's own
order (it prefers ``GOOGLE_API_KEY`` when both are set)."""


class GeminiBackendConfig(_Strict):
    """Google's Gemini API through the ``google-genai`` SDK (PRISM-Bench's own judge).

    Video parts are sent as they are, picture and soundtrack together: Gemini decodes a video's
    audio track itself, so no separate audio part is needed. The key is read from the environment
    only (``api_key_env``, else :data:`GEMINI_KEY_VARIABLES`) when the client opens; the address may
    point at any server that speaks the Gemini REST format (tests use a local one).
    """

    kind: Literal["gemini"] = "gemini"
    base_url: str | None = None
    """API root, e.g. ``http://127.0.0.1:8080/``; unset: ``base_url_env``, else Google's endpoint."""
    base_url_env: str | None = None
    """Environment variable that may hold the API root (an override; unset or empty = Google's)."""
    api_key_env: str | None = None
    """Environment variable holding the key; default: ``GOOGLE_API_KEY``, then ``GEMINI_API_KEY``."""
    api_version: str = "v1beta"
    """REST API version in the request path (``/v1beta/models/{model}:generateContent``)."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Per-request timeout in seconds (a long clip pair with thinking can take minutes)."""
    concurrency: int = Field(default=1, ge=1)
    """Requests in flight at once."""
    requests_per_minute: float | None = Field(default=None, gt=0)
    """Most request starts per minute (the project's quota); None = no pacing. Quota refusals (HTTP
    429) are retried by the judge runner like any transient failure."""
    inline_media_max_mb: float = Field(default=20.0, ge=0)
    """Media of one request up to this size travel inline in the request; larger ones are uploaded
    through the Files API first (the Gemini API caps inline requests at about 20 MB)."""

    @model_validator(mode="after")
    def _address_without_credentials(self) -> GeminiBackendConfig:
        _no_credentials(self.base_url, "base_url")
        return self


class LlamaCppConfig(_Strict):
    """A GGUF model run in-process by llama.cpp (``llama-cpp-python``)."""

    kind: Literal["llamacpp"] = "llamacpp"
    model_path: str = "packaged:qwen2.5-coder-1.5b-gguf"
    """A GGUF file, or ``packaged:<asset>`` for a model shipped in a package (omnieval.backends.assets)."""
    n_ctx: int = Field(default=4096, ge=256)
    """Context window in tokens (prompt plus answer)."""
    n_threads: int | None = Field(default=None, ge=1)
    """CPU threads; None picks the cores no other process keeps busy now (sampled from ``/proc`` for
    0.5 s at load). llama.cpp threads spin-wait on each other, so on a busy machine two threads ran
    ~10x slower per token than one (measured)."""
    n_batch: int = Field(default=512, ge=8)
    """Most tokens per llama.cpp decode (long skeleton text, grammar decoding, the lockstep
    micro-batches). A request's prompt is evaluated in fixed 32-token chunks whatever this is, so
    that its answer does not depend on the requests before it."""
    chat_format: str | None = None
    """llama.cpp chat format; None = the template stored in the GGUF."""
    constrained_decoding: Literal["skeleton", "grammar"] = "skeleton"
    """How a JSON schema is enforced: ``skeleton`` writes fixed-shape JSON itself and lets the model
    generate only the values (greedy decoding; falls back to ``grammar`` for other schemas);
    ``grammar`` uses llama.cpp's JSON-schema grammar for every token."""
    skeleton_text_sentences: int | None = Field(default=None, ge=1)
    """With ``skeleton`` decoding, end every free-text value after this many sentences (a sentence
    ends at ``.``, ``!`` or ``?`` followed by a space); None = only the model's closing quote or
    the schema's ``maxLength`` ends it. Keeps a small judge's rationales whole and short."""
    parallel_sequences: int = Field(default=1, ge=1, le=64)
    """Skeleton-decoded requests of one ``chat_many`` call decoded together, one llama.cpp
    sequence each, all in one decode per step (the judge's ``batch_size`` sets how many arrive
    together); 1 = one request at a time on the model's own context. Above 1, an answer depends on
    which requests shared its decodes (the batch's shape changes the rounding), so such a judge
    keeps every system in one judge shard."""


class TransformersConfig(_Strict):
    """A local checkpoint run in-process by ``transformers`` (small models; Audio Flamingo on GPU)."""

    kind: Literal["transformers"] = "transformers"
    model_path: str | None = None
    """Local folder of the checkpoint; default: the judge's model id resolved in the local HF cache."""
    model_class: Literal["causal-lm", "image-text-to-text", "auto"] = "causal-lm"
    """Which transformers auto class loads it."""
    dtype: str = "auto"
    """``bfloat16``, ``float32``, ... or ``auto``."""
    device: str = "cpu"
    trust_remote_code: bool = False


BuiltinBackendConfig = Annotated[
    OpenAIBackendConfig
    | VllmServerConfig
    | GeminiBackendConfig
    | LlamaCppConfig
    | TransformersConfig
    | LlamaCppServerConfig,
    Field(discriminator="kind"),
]
"""The backend kinds omnieval ships, as the discriminated union they have always validated through."""

BUILTIN_BACKEND_KINDS: tuple[str, ...] = tuple(
    cls.model_fields["kind"].default for cls in get_args(get_args(BuiltinBackendConfig)[0])
)


def _validate_backend(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A built-in kind through the union as before (same errors, same instances); any other kind
    through the config class an installed distribution registered for it."""
    if isinstance(value, PluginBackendConfig):
        return value
    kind = value.get("kind") if isinstance(value, Mapping) else None
    if not isinstance(kind, str) or kind in BUILTIN_BACKEND_KINDS:
        return handler(value)
    if kind not in LLM_BACKEND_KINDS:
        installed = ", ".join(LLM_BACKEND_KINDS.names()) or "none"
        raise PydanticCustomError(
            "backend_kind",
            "unknown llm backend kind {kind}; built in: {builtin}; installed ({group} entry points): "
            "{installed}",
            {
                "kind": repr(kind),
                "builtin": ", ".join(BUILTIN_BACKEND_KINDS),
                "group": ENTRY_POINT_GROUP,
                "installed": installed,
            },
        )
    return LLM_BACKEND_KINDS.get(kind).config.model_validate(value)


if TYPE_CHECKING:
    BackendConfig: TypeAlias = (
        OpenAIBackendConfig
        | VllmServerConfig
        | GeminiBackendConfig
        | LlamaCppConfig
        | TransformersConfig
        | LlamaCppServerConfig
        | PluginBackendConfig
    )
else:
    # Serialized as the value's own class: a plugin config dumps its own fields, and a built-in one
    # dumps exactly as through the union (cache keys and lineage hash these dumps).
    BackendConfig = Annotated[BuiltinBackendConfig, WrapValidator(_validate_backend), SerializeAsAny()]
"""Any backend config: a built-in kind, or one an installed distribution registered
(:mod:`omnieval.backends.llm._plugins`)."""
