"""Configuration of the LLM backends (pydantic, frozen, unknown keys rejected).

Secrets never appear here: a config names the *environment variable* that holds an API key
(``api_key_env``), and the key is read only when a request is sent.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


SchemaField = Literal["response_format", "guided_json", "structured_outputs"]


class HttpClientSettings(_Strict):
    """How the OpenAI-compatible client talks to a server."""

    timeout_s: float = Field(default=600.0, gt=0)
    """Per-request timeout in seconds (connect and read)."""
    concurrency: int = Field(default=1, ge=1)
    """Requests in flight at once (the paper's max concurrent sequences)."""
    schema_field: SchemaField = "response_format"
    """How a JSON schema is sent: OpenAI ``response_format`` (vLLM, llama.cpp server, hosted APIs),
    vLLM's older ``guided_json``, or vLLM's ``structured_outputs``."""
    vllm_extensions: bool = True
    """Send vLLM's extra sampling fields (repetition_penalty, top_k, stop_token_ids,
    chat_template_kwargs). Turn off for hosted APIs that reject unknown fields."""


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


class LlamaCppConfig(_Strict):
    """A GGUF model run in-process by llama.cpp (``llama-cpp-python``)."""

    kind: Literal["llamacpp"] = "llamacpp"
    model_path: str = "packaged:qwen2.5-coder-1.5b-gguf"
    """A GGUF file, or ``packaged:<asset>`` for a model shipped in a package (omnieval.backends.assets)."""
    n_ctx: int = Field(default=4096, ge=256)
    """Context window in tokens (prompt plus answer)."""
    n_threads: int | None = Field(default=None, ge=1)
    """CPU threads; None picks from the cores that are idle now. llama.cpp threads spin-wait on each
    other, so on a busy machine two threads ran ~10x slower per token than one (measured)."""
    n_batch: int = Field(default=512, ge=8)
    """Prompt tokens evaluated per step."""
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


class ScriptedConfig(_Strict):
    """A scripted stand-in model for plumbing tests: ``script`` names ``module:function`` that maps a
    :class:`ChatRequest` to the answer text. Never used by the shipped panels."""

    kind: Literal["scripted"] = "scripted"
    script: str
    delay_s: float = Field(default=0.0, ge=0)
    value_probs: bool = False
    """The script reports value probabilities (it returns :class:`Completion` objects with
    ``value_probs``), so judges using it get ``judge_expected`` rows."""


BackendConfig = Annotated[
    OpenAIBackendConfig | VllmServerConfig | LlamaCppConfig | TransformersConfig | ScriptedConfig,
    Field(discriminator="kind"),
]
