"""A scripted model for plumbing tests (like inspect_ai's mockllm): a Python function answers.

``script`` names ``module:function``; the function takes the :class:`ChatRequest` and returns the
answer text or a whole :class:`Completion` (e.g. with ``value_probs``) (or raises :class:`BackendError` to simulate failures). It is never a judge: no shipped
panel uses it, and its identity names the script so its answers never mix with a real model's cache.

Registered as the backend kind ``scripted`` (entry point ``omnieval.llm_backends``) when imported.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import Field

from omnieval.backends.llm import (
    BackendError,
    ChatBackend,
    ChatRequest,
    Completion,
    LlmBackendKind,
    ModelIdentity,
    PluginBackendConfig,
    SequentialChatMixin,
    register_llm_backend,
)


class ScriptedConfig(PluginBackendConfig):
    """A scripted stand-in model for plumbing tests: ``script`` names ``module:function`` that maps a
    :class:`ChatRequest` to the answer text. Never used by the shipped panels."""

    kind: Literal["scripted"] = "scripted"
    script: str
    delay_s: float = Field(default=0.0, ge=0)
    value_probs: bool = False
    """The script reports value probabilities (it returns :class:`Completion` objects with
    ``value_probs``), so judges using it get ``judge_expected`` rows."""


Script = Callable[[ChatRequest], "str | Completion"]


def load_script(spec: str) -> Script:
    """Import ``module:function``; raise BackendError with the reason when it cannot."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise BackendError(f"scripted backend: expected 'module:function', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
        fn = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise BackendError(f"scripted backend: cannot load {spec!r}: {exc}") from None
    if not callable(fn):
        raise BackendError(f"scripted backend: {spec!r} is not callable")
    return fn  # type: ignore[no-any-return]


class ScriptedChatBackend(SequentialChatMixin):
    """Answers each request with ``script(request)``."""

    def __init__(self, config: ScriptedConfig, *, model: str, revision: str = "") -> None:
        self.config = config
        self.script = load_script(config.script)
        self._identity = ModelIdentity(model=model, revision=revision or config.script)
        self.calls = 0

    def identity(self) -> ModelIdentity:
        return self._identity

    def chat(self, request: ChatRequest) -> Completion:
        started = time.perf_counter()
        if self.config.delay_s:
            time.sleep(self.config.delay_s)
        self.calls += 1
        answer = self.script(request)
        if isinstance(answer, Completion):
            return dataclasses.replace(answer, latency_s=time.perf_counter() - started)
        return Completion(text=answer, finish_reason="stop", latency_s=time.perf_counter() - started)

    def close(self) -> None:
        return None


def _open(config: ScriptedConfig, model: str, revision: str) -> ChatBackend:
    return ScriptedChatBackend(config, model=model, revision=revision)


def _identity(config: ScriptedConfig, model: str, revision: str) -> ModelIdentity:
    return ModelIdentity(model=model, revision=revision or config.script)


def _output_settings(config: ScriptedConfig) -> Mapping[str, object]:
    return {"script": config.script}


def _value_probs(config: ScriptedConfig, schema_constrained: bool, greedy: bool) -> bool:
    return config.value_probs


SCRIPTED = register_llm_backend(
    "scripted",
    LlmBackendKind(
        config=ScriptedConfig,
        open=_open,
        identity=_identity,
        output_settings=_output_settings,
        reports_value_probs=_value_probs,
    ),
)
"""The ``scripted`` kind as registered (the entry point's value)."""
