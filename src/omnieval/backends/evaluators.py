"""Where a trained evaluator's checkpoint folder comes from: a local folder, or a model registry.

:func:`resolve_evaluator` turns a reference into a local folder holding ``card.json`` and
``weights.safetensors``; loading the folder is :mod:`omnieval.evaluators`' job. References:

- a checkpoint folder (``models/evaluators/omnieval-standin-gender-espeak``);
- a bare registered name found under :data:`DEFAULT_ROOT` (``omnieval-standin-gender-espeak``);
- ``<scheme>:/<name>/<version>`` for a registry that registered a resolver for ``scheme`` with
  :func:`register_evaluator_registry`. ``models:/<name>/<version>`` is the MLflow Model Registry;
  its resolver lives in :mod:`omnieval.tracking.training` (the tracking layer is the only importer
  of mlflow), which registers it when imported.

So that ``models:/...`` works without the caller importing tracking first, a scheme can name the
module that registers its resolver (:data:`REGISTRY_PROVIDERS`); that module is imported only when
such a reference is resolved. Metrics and evaluators therefore never import tracking or mlflow.

Example:
    >>> register_evaluator_registry("unit", lambda name, version: (Path("ckpt") / name, version))
    >>> resolve_evaluator("unit:/gender/7")
    ResolvedEvaluator(folder=PosixPath('ckpt/gender'), version='7')
    >>> unregister_evaluator_registry("unit")
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from omnieval.errors import ConfigError, OmnievalError

DEFAULT_ROOT = Path("models/evaluators")
"""Where ``make train-demo`` writes checkpoint folders (one per registered name)."""

RegistryResolver = Callable[[str, str], tuple[Path, str]]
"""``(name, version) -> (local checkpoint folder, resolved version)``; ``version`` may be ``latest``."""

REGISTRY_PROVIDERS: dict[str, str] = {"models": "omnieval.tracking.training"}
"""Scheme -> module that registers the scheme's resolver when imported (imported on first use)."""

_RESOLVERS: dict[str, RegistryResolver] = {}
_LOCK = threading.Lock()


class ResolvedEvaluator(NamedTuple):
    """A checkpoint folder, and the registry version when it came from a registry (else None)."""

    folder: Path
    version: str | None


def register_evaluator_registry(scheme: str, resolver: RegistryResolver) -> None:
    """Make ``<scheme>:/<name>/<version>`` references resolve through ``resolver`` (last one wins)."""
    if not scheme.isidentifier():
        raise ValueError(f"registry scheme {scheme!r} must be a plain word")
    with _LOCK:
        _RESOLVERS[scheme] = resolver


def unregister_evaluator_registry(scheme: str) -> None:
    """Forget the resolver of ``scheme`` (no error when there is none)."""
    with _LOCK:
        _RESOLVERS.pop(scheme, None)


def registered_schemes() -> tuple[str, ...]:
    """Schemes with a resolver registered now, sorted (providers not yet imported are not listed)."""
    with _LOCK:
        return tuple(sorted(_RESOLVERS))


def _resolver(scheme: str) -> RegistryResolver | None:
    with _LOCK:
        found = _RESOLVERS.get(scheme)
    if found is None and scheme in REGISTRY_PROVIDERS:
        importlib.import_module(REGISTRY_PROVIDERS[scheme])
        with _LOCK:
            found = _RESOLVERS.get(scheme)
    return found


def _registry_scheme(ref: str) -> str | None:
    scheme, sep, _ = ref.partition(":/")
    return scheme if sep and scheme.isidentifier() and len(scheme) > 1 else None


def resolve_evaluator(ref: str) -> ResolvedEvaluator:
    """The local checkpoint folder (and registry version) an evaluator reference names.

    Args:
        ref: ``<scheme>:/<name>/<version>``, a checkpoint folder, or a bare name under
            :data:`DEFAULT_ROOT`.

    Raises:
        OmnievalError: a malformed registry reference, a version the registry does not hold, or a
            folder that does not exist.
        ConfigError: a registry scheme with no resolver.
    """
    scheme = _registry_scheme(ref)
    if scheme is not None:
        parts = ref[len(scheme) + 2 :].strip("/").split("/")
        if len(parts) != 2 or not all(parts):
            raise OmnievalError(f"evaluator reference {ref!r} must look like {scheme}:/<name>/<version>")
        resolver = _resolver(scheme)
        if resolver is None:
            known = ", ".join(f"{s}:/" for s in sorted({*registered_schemes(), *REGISTRY_PROVIDERS}))
            raise ConfigError(
                f"evaluator reference {ref!r}: no registry resolves {scheme}:/ (known: {known})"
            )
        folder, version = resolver(parts[0], parts[1])
        return ResolvedEvaluator(Path(folder), str(version))
    folder = Path(ref)
    if not folder.exists() and "/" not in ref and (DEFAULT_ROOT / ref).is_dir():
        folder = DEFAULT_ROOT / ref
    if not folder.is_dir():
        raise OmnievalError(
            f"evaluator {ref!r} not found: give models:/<name>/<version>, a checkpoint folder, or a name under "
            f"{DEFAULT_ROOT}/ (run `make train-demo` to train the CPU stand-ins)"
        )
    return ResolvedEvaluator(folder, None)
