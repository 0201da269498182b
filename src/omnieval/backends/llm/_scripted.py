"""A scripted model for plumbing tests (like inspect_ai's mockllm): a Python function answers.

``script`` names ``module:function``; the function takes the :class:`ChatRequest` and returns the
answer text or a whole :class:`Completion` (e.g. with ``value_probs``) (or raises :class:`BackendError` to simulate failures). It is never a judge: no shipped
panel uses it, and its identity names the script so its answers never mix with a real model's cache.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable

from omnieval.backends.llm._config import ScriptedConfig
from omnieval.backends.llm._types import (
    BackendError,
    ChatRequest,
    Completion,
    ModelIdentity,
    SequentialChatMixin,
)

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
