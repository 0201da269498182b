"""The planner of planning kinds (``orchestration``, ``semi-orchestration``, ``cascade``).

A planner is any chat backend of :mod:`omnieval.backends.llm` (llama.cpp, transformers, vLLM, any
OpenAI-compatible server, or a scripted model in tests) asked for one JSON object. Its answer is
classified the way Omni-StoryBench counts planning failures (FORMATS.md section 9): the plan either
parses, holds every required field with a usable value, and is returned; or the example fails with
one cause: ``unparseable_json``, ``missing_field``, ``unusable_prompt``, ``refusal`` or ``timeout``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from omnieval.backends.llm import (
    BackendConfig,
    BackendError,
    ChatBackend,
    ChatRequest,
    Decoding,
    ImagePart,
    Message,
    TextPart,
    TransientBackendError,
    UnsupportedInput,
    Usage,
    backend_identity,
    open_backend,
)
from omnieval.systems._generating import PlanningFailure

#: Phrases with which chat models decline a request (checked on answers that are not a plan).
_REFUSAL = re.compile(
    r"\b(I can(?:no|')t|I cannot|I am unable|I'm unable|I won't|I will not|as an AI|I'm sorry|I apologi[sz]e)\b",
    re.IGNORECASE,
)


class PlannerConfig(BaseModel):
    """Which model plans, and how.

    Example (suite YAML)::

        planner:
          model: Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf
          backend: {kind: llamacpp, model_path: "packaged:qwen2.5-coder-1.5b-gguf"}
          decoding: {temperature: 0.0, max_tokens: 256}
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    """Model id (hub id, served model name, or a label for a local file)."""
    revision: str = ""
    backend: BackendConfig
    decoding: Decoding = Decoding(temperature=0.0, top_p=1.0, repetition_penalty=1.0, seed=0, max_tokens=384)
    """Sampling settings, sent exactly as given (a field left out is the backend's default); without a
    ``decoding`` block, greedy with seed 0 and 384 new tokens."""
    schema_constrained: bool = True
    """Send the plan's JSON schema with the request (guided decoding). False lets the model write
    free text, as planners without constrained decoding do: then unparseable answers can occur."""
    sees_images: bool = False
    """Attach the current image (only for backends that take images; llama.cpp text models do not)."""
    timeout_s: float = Field(default=300.0, gt=0)
    """An answer that takes longer is a ``timeout`` planning failure (checked after the call for
    in-process backends, which cannot be interrupted)."""


@dataclass(frozen=True)
class Plan:
    """A planner's outcome for one example: a plan or a failure, always with the raw answer."""

    fields: dict[str, Any] | None
    failure: PlanningFailure | None
    raw_text: str
    error: str = ""
    seconds: float = 0.0
    tokens: dict[str, int | None] = field(default_factory=dict)

    def as_raw(self) -> dict[str, Any]:
        return {
            "planner_output": self.raw_text,
            "plan": self.fields,
            "planning_error": self.error or None,
            "planner_tokens": self.tokens,
        }


#: ``check(plan) -> (failure, message)``: a kind's own rule on top of the schema (e.g. a usable
#: image prompt); None when the plan is fine.
PlanCheck = Callable[[dict[str, Any]], tuple[PlanningFailure, str] | None]


def parse_plan(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (a fenced block or bare), or None when none parses.

    >>> parse_plan('Sure! ```json\\n{"a": 1}\\n```')
    {'a': 1}
    >>> parse_plan('{"a": ') is None
    True
    """
    candidates = [*re.findall(r"```(?:json)?\s*(.*?)```", text, flags=re.DOTALL), text]
    for chunk in candidates:
        chunk = chunk.strip()
        start = chunk.find("{")
        if start < 0:
            continue
        try:
            value, _ = json.JSONDecoder().raw_decode(chunk[start:])
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def missing_fields(plan: Mapping[str, Any], schema: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Required fields of ``schema`` that ``plan`` lacks or leaves empty (nested objects included).

    >>> schema = {"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"},
    ...           "b": {"type": "object", "required": ["c"], "properties": {"c": {"type": "string"}}}}}
    >>> missing_fields({"a": " ", "b": {}}, schema)
    ['a', 'b.c']
    """
    out: list[str] = []
    props = schema.get("properties", {})
    for name in schema.get("required", []):
        value = plan.get(name)
        where = f"{prefix}{name}"
        sub = props.get(name, {})
        if value is None or (isinstance(value, str) and not value.strip()):
            out.append(where)
        elif sub.get("type") == "object":
            if not isinstance(value, Mapping):
                out.append(where)
            else:
                out.extend(missing_fields(value, sub, prefix=f"{where}."))
        elif "enum" in sub and value not in sub["enum"]:
            out.append(f"{where} (not one of {', '.join(map(str, sub['enum']))})")
    return out


class Planner:
    """One planner model, opened lazily and closed by the system after its last example."""

    def __init__(self, config: PlannerConfig) -> None:
        self.config = config
        self._backend: ChatBackend | None = None
        self.usage = Usage()
        """Calls, tokens and seconds of every plan asked in this process (the run's ``usage.json``)."""

    def identity(self) -> dict[str, Any]:
        ident = backend_identity(self.config.backend, model=self.config.model, revision=self.config.revision)
        return {
            "model": ident.model,
            "revision": ident.revision,
            "weights_sha256": dict(ident.weights_sha256),
            "backend": self.config.backend.kind,
            "decoding": self.config.decoding.model_dump(mode="json"),
            "schema_constrained": self.config.schema_constrained,
            "sees_images": self.config.sees_images,
        }

    def open(self) -> None:
        if self._backend is None:
            self._backend = open_backend(
                self.config.backend, model=self.config.model, revision=self.config.revision
            )

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def plan(
        self,
        system_prompt: str,
        user_prompt: str,
        schema: Mapping[str, Any],
        *,
        images: Sequence[Path] = (),
        check: PlanCheck | None = None,
    ) -> Plan:
        """Ask for one plan and classify the answer (see the module docstring)."""
        self.open()
        assert self._backend is not None
        parts: list[TextPart | ImagePart] = []
        if self.config.sees_images:
            parts.extend(ImagePart(p) for p in images)
        parts.append(TextPart(user_prompt))
        request = ChatRequest(
            messages=(Message.text_only("system", system_prompt), Message("user", tuple(parts))),
            decoding=self.config.decoding,
            json_schema=schema if self.config.schema_constrained else None,
        )
        start = time.perf_counter()
        try:
            completion = self._backend.chat(request)
        except TransientBackendError as exc:
            seconds = time.perf_counter() - start
            self.usage.add_call(None, seconds)
            failure = (
                PlanningFailure.TIMEOUT
                if "timeout" in str(exc).lower() or "timed out" in str(exc).lower()
                else None
            )
            if failure is None:
                raise
            return Plan(None, failure, "", str(exc), seconds)
        except UnsupportedInput:
            raise
        except BackendError as exc:
            seconds = time.perf_counter() - start
            self.usage.add_call(None, seconds)
            return Plan(None, PlanningFailure.UNPARSEABLE_JSON, "", f"planner error: {exc}", seconds)
        seconds = time.perf_counter() - start
        self.usage.add_call(completion, seconds)
        text = completion.text
        tokens = {"prompt": completion.prompt_tokens, "completion": completion.completion_tokens}
        if seconds > self.config.timeout_s:
            return Plan(None, PlanningFailure.TIMEOUT, text, f"answer took {seconds:.1f} s", seconds, tokens)
        fields = parse_plan(text)
        if fields is None:
            cause = PlanningFailure.REFUSAL if _REFUSAL.search(text) else PlanningFailure.UNPARSEABLE_JSON
            return Plan(None, cause, text, "no JSON object in the answer", seconds, tokens)
        absent = missing_fields(fields, schema)
        if absent:
            return Plan(
                fields, PlanningFailure.MISSING_FIELD, text, "missing: " + ", ".join(absent), seconds, tokens
            )
        if check is not None:
            problem = check(fields)
            if problem is not None:
                return Plan(fields, problem[0], text, problem[1], seconds, tokens)
        return Plan(fields, None, text, "", seconds, tokens)


__all__ = ["Plan", "PlanCheck", "Planner", "PlannerConfig", "missing_fields", "parse_plan"]
