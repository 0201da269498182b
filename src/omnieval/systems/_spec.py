"""The config models of a suite's ``systems:`` entries.

They live with the systems, not with the suite model (:mod:`omnieval.config`), because every
generating kind subclasses :class:`SystemSpec` for its own typed config: the systems package is
below the suite config in the layers, so the suite imports these models from here and no system
module has to import the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class SystemSpec(BaseModel):
    """One ``systems:`` entry. Every kind has its own typed config (a subclass), chosen by ``kind``.

    Frozen and closed to unknown keys like every suite model, so a typo in a system's block fails
    when the suite loads, with the key's path.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    """Registered system kind (``omnieval benchmarks`` lists each benchmark's kinds)."""
    diagnostic: bool | None = Field(default=None, exclude_if=lambda value: value is None)
    """A diagnostic system (a probe such as a muted reference) is scored and shown, but stays out
    of whatever the benchmark derives from its systems under test (PRISM-Bench: the global
    ground-truth mean of its calibration). ``None`` leaves it to the benchmark, which may treat some
    kinds as diagnostic by default (PRISM-Bench: ``muted``, ``swapped-audio``, ``offset``). Left out
    of dumps while unset, so the configs, and the cache keys made from them, of suites that never
    set it stay byte-identical."""

    def build(self, factory: Callable[..., Any], *, condition: str, modalities: Sequence[str]) -> Any:
        """The system this entry describes, from its kind's registered factory, for one input
        condition of a benchmark that asks for ``modalities``.

        Default: the factory takes the typed entry itself (a kind with its own config, such as a
        benchmark's ``cpu-t2av``). :class:`SystemConfig` passes keyword arguments instead."""
        del condition, modalities  # the typed entry says everything such a kind needs
        return factory(self)

    def imported_from(self) -> Path | None:
        """The folder of outputs made elsewhere that this entry evaluates (``import``); its content
        keys the generate stage. None for every kind that generates or derives its outputs."""
        return None


class SystemConfig(SystemSpec):
    """The config of reference systems (``oracle``, ``copy-current``, ``shuffled``...): a kind
    without a config of its own gets this one, and a reference kind's own config subclasses it.

    Its factory takes keyword arguments (:meth:`factory_arguments`), only those the entry sets."""

    seed: int | None = None
    """Seed for systems with randomness (``shuffled``)."""
    path: str | None = None
    """Candidate folder for ``import``."""

    def factory_arguments(self, *, condition: str, modalities: Sequence[str]) -> dict[str, Any]:
        """Keyword arguments of the kind's factory: ``seed`` and ``path`` where set; outputs of a
        benchmark with conditions sit in one subfolder of ``path`` per condition when it has them."""
        del modalities
        kwargs: dict[str, Any] = {}
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if self.path is not None:
            per_condition = Path(self.path) / condition
            kwargs["path"] = str(per_condition) if condition and per_condition.is_dir() else self.path
        return kwargs

    def build(self, factory: Callable[..., Any], *, condition: str, modalities: Sequence[str]) -> Any:
        return factory(**self.factory_arguments(condition=condition, modalities=modalities))


class ImportConfig(SystemConfig):
    """``import``: outputs made elsewhere, in the candidate layout (``path``), evaluated as they are."""

    kind: Literal["import"] = "import"

    def factory_arguments(self, *, condition: str, modalities: Sequence[str]) -> dict[str, Any]:
        """The generic arguments plus the benchmark's modalities (what is read from ``path``)."""
        return {
            **super().factory_arguments(condition=condition, modalities=modalities),
            "modalities": tuple(modalities),
        }

    def imported_from(self) -> Path | None:
        return Path(self.path) if self.path else None
