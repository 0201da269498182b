"""A spending limit for generating systems: stop generating once a budget is used, resumably.

A suite's ``generation.budget`` (:class:`GenerationBudget`) caps how many examples each generating
system may generate in one run and/or how many wall seconds it may spend generating them. The
generate stage makes one :class:`GenerationLimit` per system (shared by its input conditions) and
hands it to :meth:`~omnieval.systems.GeneratingSystem.generate`, which asks :meth:`~GenerationLimit.allows`
before each example it would have to generate: examples reused from the example cache are free,
and once the budget is used the rest are not generated (*withheld*): every modality of such an
example gets ``missing.txt`` with :attr:`GenerationLimit.reason`, so it counts as a missing output,
never as a value. The example in progress when the budget runs out is finished, so the spend can
pass ``max_seconds`` by at most one example.

Resuming is the example cache's doing: every generated example was stored as it finished, so a
rerun with a larger budget generates only the examples that were withheld.

Example:
    >>> limit = GenerationLimit(GenerationBudget(max_examples=2))
    >>> limit.spend(seconds=1.5); limit.spend(seconds=0.5)
    >>> limit.allows(), limit.reason
    (False, 'generation budget used: 2 of max_examples 2 examples generated; rerun with a larger generation.budget to finish (generated examples come from the cache)')
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, model_validator


class GenerationBudget(BaseModel):
    """The most each generating system may spend in one run (``generation.budget`` in a suite).

    Examples reused from the example cache cost nothing; reference and ``import`` systems are never
    limited (they generate nothing).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_examples: int | None = Field(default=None, ge=1)
    """Examples a system may generate (cache misses), over all its input conditions."""
    max_seconds: float | None = Field(default=None, gt=0)
    """Wall seconds a system may spend generating examples (each example's whole run: planner,
    experts, command), over all its input conditions."""

    @model_validator(mode="after")
    def _some_limit(self) -> GenerationBudget:
        if self.max_examples is None and self.max_seconds is None:
            raise ValueError("a budget needs max_examples or max_seconds")
        return self


@dataclass
class GenerationLimit:
    """What one system generated under a :class:`GenerationBudget`, and what it withheld.

    Attributes:
        budget: The limit in force.
        clock: Wall clock in seconds (tests pass a fake one); the driver times each example with it.
        examples: Examples generated so far under this limit.
        seconds: Wall seconds those examples took.
        withheld: Examples left ungenerated because the budget was used.
    """

    budget: GenerationBudget
    clock: Callable[[], float] = field(default=time.monotonic)
    examples: int = 0
    seconds: float = 0.0
    withheld: int = 0

    def spend(self, *, seconds: float) -> None:
        """One example generated in ``seconds`` wall seconds."""
        self.examples += 1
        self.seconds += max(0.0, seconds)

    def allows(self) -> bool:
        """Whether another example may be generated."""
        return not (self._over_examples or self._over_seconds)

    def withhold(self, count: int = 1) -> None:
        self.withheld += count

    @property
    def _over_examples(self) -> bool:
        return self.budget.max_examples is not None and self.examples >= self.budget.max_examples

    @property
    def _over_seconds(self) -> bool:
        return self.budget.max_seconds is not None and self.seconds >= self.budget.max_seconds

    @property
    def reason(self) -> str:
        """Why an example was withheld (names the cap that was reached and the way on)."""
        if self._over_examples:
            used = f"{self.examples} of max_examples {self.budget.max_examples} examples generated"
        else:
            used = f"{self.seconds:.1f} s of max_seconds {self.budget.max_seconds:g} s spent"
        return (
            f"generation budget used: {used}; rerun with a larger generation.budget to finish "
            "(generated examples come from the cache)"
        )


__all__ = ["GenerationBudget", "GenerationLimit"]
