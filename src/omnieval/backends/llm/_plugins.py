"""Backend kinds that other installed distributions add (entry-point group ``omnieval.llm_backends``).

The built-in kinds are a closed pydantic union (:data:`~omnieval.backends.llm.BackendConfig`); a
config whose ``kind`` is not one of them is looked up here. A distribution names each kind it adds
as an entry point of the group (entry name = the kind) whose import registers a
:class:`LlmBackendKind` with :func:`~omnieval.backends.llm.register_llm_backend`: the config class,
the factory and the identity function. Entry points are imported the first time a config names a kind that is not built
in (or the kinds are listed), once per process, so a run naming only built-in kinds imports none.

Example:
    >>> from typing import Literal
    >>> from omnieval.backends.llm import register_llm_backend
    >>> class EchoConfig(PluginBackendConfig):
    ...     kind: Literal["echo"] = "echo"
    >>> echo = LlmBackendKind(config=EchoConfig, open=print, identity=print)
    >>> with LLM_BACKEND_KINDS.restoring():
    ...     _ = register_llm_backend("echo", echo)
    ...     LLM_BACKEND_KINDS.registered()["echo"].config.__name__
    'EchoConfig'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from omnieval.backends.llm._types import ChatBackend, ModelIdentity
from omnieval.errors import ConfigError
from omnieval.registry import Registry

ENTRY_POINT_GROUP = "omnieval.llm_backends"

BackendFactory = Callable[[Any, str, str], ChatBackend]
"""``(config, model, revision) -> backend``: loads the model (a server, weights...)."""
IdentityFn = Callable[[Any, str, str], ModelIdentity]
"""``(config, model, revision) -> identity`` without loading the model (cache keys, lineage)."""


class PluginBackendConfig(BaseModel):
    """Base of a plugin kind's config: frozen and strict like the built-in ones.

    A subclass narrows ``kind`` to ``Literal["<its kind>"]`` with that default, so that its dumps
    name the kind and validate back to the same class.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str


def _no_settings(config: Any) -> Mapping[str, Any]:
    return {}


def _no_value_probs(config: Any, schema_constrained: bool, greedy: bool) -> bool:
    return False


def _no(config: Any) -> bool:
    return False


@dataclass(frozen=True)
class LlmBackendKind:
    """What a distribution registers for one backend kind.

    The optional callables answer, for a config of this kind, what
    :func:`~omnieval.backends.llm.output_fingerprint`, :func:`~omnieval.backends.llm.reports_value_probs`,
    :func:`~omnieval.backends.llm.answers_depend_on_call_order` and
    :func:`~omnieval.backends.llm.carries_video_audio` answer for the built-in kinds; by default a
    kind's answers depend on its ``kind`` alone and it reports no value probabilities.
    """

    config: type[PluginBackendConfig]
    open: BackendFactory
    identity: IdentityFn
    output_settings: Callable[[Any], Mapping[str, Any]] = _no_settings
    """Settings of a config that change what the model answers, keyed into every cache key after
    ``kind`` (a changed value must give other keys, or answers of other settings would be reused)."""
    reports_value_probs: Callable[[Any, bool, bool], bool] = _no_value_probs
    """``(config, schema_constrained, greedy)``: whether answers carry ``value_probs``."""
    answers_depend_on_call_order: Callable[[Any], bool] = _no
    carries_video_audio: Callable[[Any], bool] = _no


LLM_BACKEND_KINDS: Registry[LlmBackendKind] = Registry("llm backend kind")
"""Installed backend kinds by name (the built-in ones are not here)."""
LLM_BACKEND_KINDS.use_entry_points(ENTRY_POINT_GROUP, error=ConfigError)
