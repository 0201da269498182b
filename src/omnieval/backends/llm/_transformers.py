"""transformers backend: a local checkpoint in-process (small models here; Audio Flamingo Next on GPU).

The chat is rendered by the checkpoint's own chat template: the tokenizer's for text-only models, the
processor's for multimodal ones (image and audio parts become ``{"type": "image"|"audio", "path": ...}``
content items, in order). Decoding passes only what the request sets (:func:`generation_settings`):
temperature 0 is greedy (``do_sample=False``), a higher one samples; repetition penalty, seed and
new-token limit when set; ``stop_token_ids`` are added to the end tokens. Anything unset is the
checkpoint's generation config. JSON schemas are not enforced here (transformers has no schema-guided decoding): the answer
goes to the validity ledger like any other, which is also how the paper ran Audio Flamingo Next.

Only local files are read (``local_files_only``): a checkpoint that is not on disk is unavailable.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from omnieval.backends.llm._config import TransformersConfig
from omnieval.backends.llm._identity import hf_hub_cache, hf_identity, local_identity, resolve_revision
from omnieval.backends.llm._types import (
    BackendUnavailable,
    ChatRequest,
    Completion,
    Decoding,
    ImagePart,
    ModelIdentity,
    SequentialChatMixin,
    TextPart,
    UnsupportedInput,
)

log = logging.getLogger(__name__)


def local_checkpoint(config: TransformersConfig, model: str, revision: str) -> Path:
    """The folder to load: ``model_path``, or the model's snapshot in the local hub cache."""
    if config.model_path:
        path = Path(config.model_path).expanduser()
        if not path.is_dir():
            raise BackendUnavailable(f"checkpoint folder {path} not found")
        return path
    commit = resolve_revision(model, revision)
    snapshot = hf_hub_cache() / ("models--" + model.replace("/", "--")) / "snapshots" / (commit or "main")
    if not snapshot.is_dir():
        raise BackendUnavailable(
            f"{model} is not in the local Hugging Face cache ({hf_hub_cache()}); download it on a machine "
            "with hub access first (omnieval never downloads weights at run time)"
        )
    return snapshot


def _torch_dtype(name: str) -> Any:
    import torch

    if name == "auto":
        return "auto"
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise BackendUnavailable(f"unknown torch dtype {name!r}")
    return value


GENERATION_AUTO_CLASSES: tuple[str, ...] = (
    "AutoModelForMultimodalLM",
    "AutoModelForImageTextToText",
    "AutoModelForSeq2SeqLM",
    "AutoModelForCausalLM",
)
"""The auto classes whose models have a language-model head, in the order ``model_class: auto``
tries them. ``AutoModel`` is not among them: for most architectures it builds the bare backbone,
which has no ``generate`` (Audio Flamingo Next, a ``musicflamingo`` checkpoint, is one of them)."""

_NAMED_CLASSES = {
    "causal-lm": "AutoModelForCausalLM",
    "image-text-to-text": "AutoModelForImageTextToText",
}


def generation_auto_class(path: Path, config: TransformersConfig) -> Any:
    """The transformers auto class that loads the checkpoint at ``path`` with a generation head.

    ``causal-lm`` and ``image-text-to-text`` name their class. ``auto`` reads the checkpoint's
    ``config.json`` and takes the first of :data:`GENERATION_AUTO_CLASSES` that knows its
    architecture; a remote-code checkpoint (``auto_map``) gets the first of those classes its
    ``auto_map`` names. BackendUnavailable when none fits: a model without a language-model head
    cannot judge.
    """
    import transformers

    if config.model_class in _NAMED_CLASSES:
        return getattr(transformers, _NAMED_CLASSES[config.model_class])
    try:
        model_config = transformers.AutoConfig.from_pretrained(
            path, local_files_only=True, trust_remote_code=config.trust_remote_code
        )
    except (OSError, ValueError) as exc:
        raise BackendUnavailable(f"cannot read the model config in {path}: {exc}") from None
    auto_map = getattr(model_config, "auto_map", None) or {}
    for name in GENERATION_AUTO_CLASSES:
        auto_class = getattr(transformers, name, None)
        if auto_class is None:  # pragma: no cover - all four exist in the locked transformers
            continue
        if name in auto_map or type(model_config) in auto_class._model_mapping:
            return auto_class
    raise BackendUnavailable(
        f"{path}: transformers {transformers.__version__} has no generation class for model type "
        f"{getattr(model_config, 'model_type', '?')!r} (tried {', '.join(GENERATION_AUTO_CLASSES)})"
    )


def load_generation_model(path: Path, config: TransformersConfig) -> Any:
    """Load the checkpoint at ``path`` for generation, on ``config.device``, in eval mode.

    Local files only; this is the loading step of :class:`TransformersChatBackend`, apart so the
    paper panels' architectures can be checked on tiny checkpoints built in a test.
    """
    auto_class = generation_auto_class(path, config)
    try:
        model = auto_class.from_pretrained(
            path,
            dtype=_torch_dtype(config.dtype),
            local_files_only=True,
            trust_remote_code=config.trust_remote_code,
        )
    except (OSError, ValueError) as exc:
        raise BackendUnavailable(f"cannot load {path}: {exc}") from None
    if not callable(getattr(model, "generate", None)):
        raise BackendUnavailable(f"{path}: {type(model).__name__} has no generate method")
    model.to(config.device)
    model.eval()
    return model


def generation_settings(decoding: Decoding) -> dict[str, Any]:
    """``generate``'s sampling keywords for ``decoding``: only what it sets; the checkpoint's
    generation config (transformers' defaults) governs the rest.

    transformers has no temperature 0: a stated temperature 0 is greedy (``do_sample=False``), and
    the sampling fields, which greedy decoding does not use, are passed as None so a checkpoint's
    own sampling defaults do not warn. A temperature above 0 samples (``do_sample=True``).

    Example:
        >>> generation_settings(Decoding(temperature=0.0, max_tokens=8))
        {'do_sample': False, 'temperature': None, 'top_p': None, 'top_k': None, 'max_new_tokens': 8}
        >>> generation_settings(Decoding(seed=3))
        {}
    """
    out: dict[str, Any] = {}
    greedy = decoding.temperature == 0
    if greedy:
        out.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    elif decoding.temperature is not None:
        out.update(do_sample=True, temperature=decoding.temperature)
    if not greedy:
        out.update({k: v for k, v in (("top_p", decoding.top_p), ("top_k", decoding.top_k)) if v is not None})
    if decoding.repetition_penalty is not None:
        out["repetition_penalty"] = decoding.repetition_penalty
    if decoding.max_tokens is not None:
        out["max_new_tokens"] = decoding.max_tokens
    return out


def text_generation_kwargs(model: Any, generate: dict[str, Any]) -> dict[str, Any]:
    """``generate``'s keyword arguments for ``model``, for a text answer only.

    Omni models whose ``generate`` drives a thinker and a talker (Qwen2.5-Omni, Qwen3-Omni) take the
    text decoder's settings with a ``thinker_`` prefix, and would otherwise apply their own default
    limit (1024 new tokens) and end tokens in place of the request's; they are also told not to
    speak (``return_audio=False``): a judge answers in text.
    """
    import inspect

    try:
        parameters = inspect.signature(model.generate).parameters
    except (TypeError, ValueError):  # pragma: no cover - generate is a plain method on every model
        return generate
    if "thinker_max_new_tokens" not in parameters:
        return generate
    out: dict[str, Any] = {f"thinker_{key}": value for key, value in generate.items()}
    if "return_audio" in parameters:
        out["return_audio"] = False
    return out


class TransformersChatBackend(SequentialChatMixin):
    """Greedy (or sampled) generation from a local transformers checkpoint."""

    def __init__(self, config: TransformersConfig, *, model: str, revision: str = "") -> None:
        try:
            import transformers
        except ImportError as exc:  # pragma: no cover - transformers is in the lock
            raise BackendUnavailable("transformers is not installed") from exc
        self.config = config
        self.path = local_checkpoint(config, model, revision)
        self._identity = (
            local_identity(model, revision, self.path) if config.model_path else hf_identity(model, revision)
        )
        started = time.perf_counter()
        common: dict[str, Any] = {"local_files_only": True, "trust_remote_code": config.trust_remote_code}
        self.processor: Any = None
        if config.model_class == "causal-lm":
            self.tokenizer: Any = transformers.AutoTokenizer.from_pretrained(self.path, **common)
        else:
            self.processor = transformers.AutoProcessor.from_pretrained(self.path, **common)  # type: ignore[no-untyped-call]
            self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.model: Any = load_generation_model(self.path, config)
        self.load_s = time.perf_counter() - started
        log.info("loaded %s with transformers in %.1f s", self.path, self.load_s)

    def identity(self) -> ModelIdentity:
        return self._identity

    def _conversation(self, request: ChatRequest) -> list[dict[str, Any]]:
        conversation: list[dict[str, Any]] = []
        for message in request.messages:
            if not message.has_media:
                content: Any = message.text
                if self.processor is not None:
                    content = [{"type": "text", "text": message.text}]
                conversation.append({"role": message.role, "content": content})
                continue
            if self.processor is None:
                raise UnsupportedInput(f"{self.path.name} is a text-only checkpoint: no images or audio")
            items: list[dict[str, Any]] = []
            for part in message.parts:
                if isinstance(part, TextPart):
                    items.append({"type": "text", "text": part.text})
                else:
                    kind = "image" if isinstance(part, ImagePart) else "audio"
                    items.append({"type": kind, "path": str(part.path)})
            conversation.append({"role": message.role, "content": items})
        return conversation

    def chat(self, request: ChatRequest) -> Completion:
        import torch

        renderer = self.processor if self.processor is not None else self.tokenizer
        inputs = renderer.apply_chat_template(
            self._conversation(request),
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
            **dict(request.chat_template_kwargs),
        )
        inputs = {k: v.to(self.config.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        decoding = request.decoding
        generate = generation_settings(decoding)
        generate["pad_token_id"] = self.tokenizer.pad_token_id or self.tokenizer.eos_token_id
        if decoding.stop_token_ids:
            eos = self.model.generation_config.eos_token_id
            eos_list = [eos] if isinstance(eos, int) else list(eos or [])
            generate["eos_token_id"] = eos_list + list(decoding.stop_token_ids)
        if decoding.seed is not None:
            torch.manual_seed(decoding.seed)
        started = time.perf_counter()
        with torch.inference_mode():
            output = self.model.generate(**inputs, **text_generation_kwargs(self.model, generate))
        latency = time.perf_counter() - started
        prompt_len = int(inputs["input_ids"].shape[-1])
        new_tokens = output[0, prompt_len:]
        text = self.tokenizer.decode(new_tokens, skip_special_tokens=True)
        cap = decoding.max_tokens or getattr(self.model.generation_config, "max_new_tokens", None)
        finish = "length" if cap is not None and len(new_tokens) >= cap else "stop"
        return Completion(
            text=text,
            finish_reason=finish,
            prompt_tokens=prompt_len,
            completion_tokens=len(new_tokens),
            latency_s=latency,
        )

    def close(self) -> None:
        self.model = None
