"""The config models of a suite's ``systems:`` entries.

They live with the systems, not with the suite model (:mod:`omnieval.config`), because every
generating kind subclasses :class:`SystemSpec` for its own typed config: the systems package is
below the suite config in the layers, so the suite imports these models from here and no system
module has to import the suite.
"""

from __future__ import annotations

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


class SystemConfig(SystemSpec):
    """The config of reference systems and ``import`` (``oracle``, ``copy-current``, ``shuffled``...)."""

    seed: int | None = None
    """Seed for systems with randomness (``shuffled``)."""
    path: str | None = None
    """Candidate folder for ``import``."""
