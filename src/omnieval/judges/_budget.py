"""A spending limit for the judges: stop making model calls once a budget is used, resumably.

A suite's ``judges.budget`` (:class:`JudgeBudget`) caps the model calls and/or the tokens the
judge stage may spend in one run. The stage opens a :func:`spending_limit` around its panels; the
shared call runner asks :func:`active_limit` before each batch and, once the budget is used, makes
no further call: the jobs left are settled as not judged, with :attr:`SpendTracker.reason` as
their note (never as a score). Because the budget is checked between batches, the batch in flight
when it runs out is finished, so the spend can pass the cap by at most one batch.

Resuming is the response cache's doing: every answered call was cached as it arrived, so a rerun
with a larger budget pays only for the calls that were withheld.

Example:
    >>> with spending_limit(JudgeBudget(max_calls=2)) as limit:
    ...     limit.spend(calls=2, tokens=None)
    ...     limit.allows(), limit.reason
    (False, 'judge budget used: 2 of max_calls 2 calls made; rerun with a larger judges.budget to finish (answered calls come from the cache)')
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator


class JudgeBudget(BaseModel):
    """The most the judge stage may spend in one run (``judges.budget`` in a suite).

    Tokens count what the backends report (prompt + completion); a backend that reports no token
    counts spends none against ``max_tokens``, so cap such judges with ``max_calls``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_calls: int | None = Field(default=None, ge=1)
    """Model calls (requests sent, resends included); cache hits are free."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Prompt plus completion tokens the backends report."""

    @model_validator(mode="after")
    def _some_limit(self) -> JudgeBudget:
        if self.max_calls is None and self.max_tokens is None:
            raise ValueError("a budget needs max_calls or max_tokens")
        return self


@dataclass
class SpendTracker:
    """What the judges spent under one :class:`JudgeBudget`, and what they were refused."""

    budget: JudgeBudget
    calls: int = 0
    tokens: int = 0
    withheld: int = 0
    """Jobs settled without a call because the budget was used."""

    def spend(self, *, calls: int, tokens: int | None) -> None:
        self.calls += calls
        self.tokens += tokens or 0

    def allows(self) -> bool:
        """Whether another batch may be sent."""
        over_calls = self.budget.max_calls is not None and self.calls >= self.budget.max_calls
        over_tokens = self.budget.max_tokens is not None and self.tokens >= self.budget.max_tokens
        return not (over_calls or over_tokens)

    def withhold(self, count: int) -> None:
        self.withheld += count

    @property
    def reason(self) -> str:
        """The note of a job the budget withheld (names the cap that was reached and the way on)."""
        if self.budget.max_calls is not None and self.calls >= self.budget.max_calls:
            used = f"{self.calls} of max_calls {self.budget.max_calls} calls made"
        else:
            used = f"{self.tokens} of max_tokens {self.budget.max_tokens} tokens spent"
        return (
            f"judge budget used: {used}; rerun with a larger judges.budget to finish "
            "(answered calls come from the cache)"
        )


_ACTIVE: ContextVar[SpendTracker | None] = ContextVar("omnieval_judge_budget", default=None)


@contextmanager
def spending_limit(budget: JudgeBudget | None) -> Iterator[SpendTracker | None]:
    """Make ``budget`` the limit of every judge call in this context (None: no limit)."""
    tracker = SpendTracker(budget) if budget is not None else None
    token = _ACTIVE.set(tracker)
    try:
        yield tracker
    finally:
        _ACTIVE.reset(token)


def active_limit() -> SpendTracker | None:
    """The spending limit in force here, if any (read by the call runner before each batch)."""
    return _ACTIVE.get()


__all__ = ["JudgeBudget", "SpendTracker", "active_limit", "spending_limit"]
