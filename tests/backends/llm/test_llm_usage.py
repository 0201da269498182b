"""Usage totals (``omnieval.backends.llm._usage``): what is summed, what stays unknown, prices."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from omnieval.backends.llm import Completion, TokenPrice, Usage, merge_usage_json, usage_table


def test_usage_sums_reported_tokens_and_counts_cache_hits_without_cost() -> None:
    usage = Usage()
    usage.add_call(Completion("a", prompt_tokens=100, completion_tokens=20), 0.5)
    usage.add_call(Completion("b", prompt_tokens=50, completion_tokens=5), 0.25)
    usage.add_call(None, 1.0)  # a failed request: time spent, no tokens known
    usage.add_cached(3)
    assert usage.to_json() == {
        "calls": 3,
        "cached_calls": 3,
        "prompt_tokens": 150,
        "completion_tokens": 25,
        "calls_with_tokens": 2,
        "seconds": 1.75,
    }


def test_unreported_tokens_are_null_and_never_priced() -> None:
    usage = Usage()
    usage.add_call(Completion("scripted answer"), 0.1)
    price = TokenPrice(prompt_per_million=1.0, completion_per_million=2.0)
    entry = usage.to_json(price)
    assert entry["prompt_tokens"] is None and entry["completion_tokens"] is None
    assert "cost" not in entry
    # Nothing sent at all: zero tokens is the truth, and it costs nothing.
    assert Usage(cached_calls=4).to_json(price)["cost"] == 0.0


def test_prices_turn_tokens_into_cost_and_tables_merge_per_name() -> None:
    price = TokenPrice(prompt_per_million=0.5, completion_per_million=1.5, currency="EUR")
    one = Usage(calls=2, prompt_tokens=1_000_000, completion_tokens=200_000, calls_with_tokens=2, seconds=3.0)
    table = usage_table({"judge-b": one, "judge-a": Usage(cached_calls=1)}, {"judge-b": price})
    assert list(table) == ["judge-a", "judge-b"]
    assert table["judge-b"]["cost"] == pytest.approx(0.8) and table["judge-b"]["currency"] == "EUR"
    merged = merge_usage_json(table, {"judge-b": one.to_json()})
    assert merged["judge-b"].prompt_tokens == 2_000_000 and merged["judge-b"].calls == 4
    assert merged["judge-a"].cached_calls == 1


def test_token_price_is_frozen_and_strict() -> None:
    with pytest.raises(ValidationError):
        TokenPrice.model_validate({"prompt_per_million": 1, "completion_per_million": 1, "extra": 1})
    with pytest.raises(ValidationError):
        TokenPrice(prompt_per_million=-1, completion_per_million=0)
