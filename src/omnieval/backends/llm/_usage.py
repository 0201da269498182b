"""What model calls spent: requests, cache hits, prompt and completion tokens, seconds, and money.

Backends put the token counts they know on each :class:`~omnieval.backends.llm.Completion`
(``prompt_tokens``/``completion_tokens``: None when the backend cannot tell, e.g. the scripted and
simulated ones). A :class:`Usage` adds those up for one judge or one generating system. Counts a
backend did not report stay unknown rather than being guessed: ``calls_with_tokens`` says how many
of the calls the token totals cover, and :meth:`Usage.to_json` writes ``null`` tokens when none of
them reported any, so a report never shows "0 tokens" for a model whose use was simply not counted.

A cache hit costs nothing now: it is counted in ``cached_calls`` and adds no tokens or seconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from omnieval.backends.llm._types import Completion

USAGE_FIELDS = ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "seconds")
"""The figures every usage entry carries (the MLflow metric suffixes ``usage.<kind>.<name>.<field>``)."""


class TokenPrice(BaseModel):
    """The price of one model's (or judge's) tokens, per million, in one currency.

    Example:
        >>> TokenPrice(prompt_per_million=0.5, completion_per_million=1.5).cost(2_000_000, 1_000_000)
        2.5
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_per_million: float = Field(ge=0.0)
    """Price of one million prompt (input) tokens."""
    completion_per_million: float = Field(ge=0.0)
    """Price of one million completion (generated) tokens."""
    currency: str = Field(default="USD", min_length=1)
    """Currency code the prices are in (totals are only summed within one currency)."""

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.prompt_per_million + completion_tokens * self.completion_per_million
        ) / 1_000_000


@dataclass
class Usage:
    """Running totals of one model user's calls (a judge, a generating system).

    Attributes:
        calls: requests sent to a model, resends and failed requests included (they took time).
        cached_calls: requests answered from a response cache (no tokens, no seconds).
        prompt_tokens: prompt tokens the backend reported, summed over ``calls_with_tokens`` calls.
        completion_tokens: generated tokens the backend reported, over the same calls.
        calls_with_tokens: how many of ``calls`` reported token counts.
        seconds: wall time spent waiting for the model on these calls.
    """

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls_with_tokens: int = 0
    seconds: float = 0.0

    def add_call(self, completion: Completion | None, seconds: float) -> None:
        """One request sent to a model: its answer (None when it failed) and the time it took."""
        if completion is None:
            self.add_counts(None, None, seconds)
        else:
            self.add_counts(completion.prompt_tokens, completion.completion_tokens, seconds)

    def add_counts(self, prompt_tokens: int | None, completion_tokens: int | None, seconds: float) -> None:
        """One request from counts a caller read itself (e.g. a response's ``usage``)."""
        self.calls += 1
        self.seconds += max(0.0, seconds)
        if prompt_tokens is not None or completion_tokens is not None:
            self.calls_with_tokens += 1
            self.prompt_tokens += int(prompt_tokens or 0)
            self.completion_tokens += int(completion_tokens or 0)

    def add_cached(self, count: int = 1) -> None:
        self.cached_calls += count

    def merge(self, other: Usage) -> None:
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls_with_tokens += other.calls_with_tokens
        self.seconds += other.seconds

    @property
    def tokens_known(self) -> bool:
        """Whether the token totals mean anything: some call reported them, or no call was sent."""
        return self.calls_with_tokens > 0 or self.calls == 0

    def to_json(self, price: TokenPrice | None = None) -> dict[str, Any]:
        """The entry ``usage.json`` and the leaderboards keep; ``cost`` when a price is given and
        the tokens are known."""
        known = self.tokens_known
        out: dict[str, Any] = {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "prompt_tokens": self.prompt_tokens if known else None,
            "completion_tokens": self.completion_tokens if known else None,
            "calls_with_tokens": self.calls_with_tokens,
            "seconds": round(self.seconds, 3),
        }
        if price is not None and known:
            out["cost"] = round(price.cost(self.prompt_tokens, self.completion_tokens), 6)
            out["currency"] = price.currency
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        """Read back :meth:`to_json` (unknown token counts read as 0 with their calls uncovered)."""
        seconds = float(data.get("seconds") or 0.0)
        return cls(
            calls=int(data.get("calls") or 0),
            cached_calls=int(data.get("cached_calls") or 0),
            prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0),
            calls_with_tokens=int(data.get("calls_with_tokens") or 0),
            seconds=seconds if math.isfinite(seconds) else 0.0,
        )


def usage_table(
    entries: Mapping[str, Usage], prices: Mapping[str, TokenPrice] | None = None
) -> dict[str, Any]:
    """``{name: entry}`` for each of ``entries`` (sorted), priced by ``prices[name]`` when listed."""
    prices = prices or {}
    return {name: entries[name].to_json(prices.get(name)) for name in sorted(entries)}


def merge_usage_json(*tables: Mapping[str, Mapping[str, Any]]) -> dict[str, Usage]:
    """Several ``{name: entry}`` tables (shards, panels) summed per name."""
    merged: dict[str, Usage] = {}
    for table in tables:
        for name, entry in table.items():
            merged.setdefault(name, Usage()).merge(Usage.from_json(entry))
    return merged


__all__ = ["USAGE_FIELDS", "TokenPrice", "Usage", "merge_usage_json", "usage_table"]
