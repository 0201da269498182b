"""toy_caption: a declared benchmark kept under tests/, registered in a registry of its own.

It is :class:`~omnieval.benchmarks.DeclaredBenchmark` at its smallest (the record model, the
targets, the range and one metric), so ``omnieval benchmarks`` and suites never see it; the worked
example a user copies is ``examples/caption_f1/`` (docs/benchmarks.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from omnieval.benchmarks import Benchmark, DeclaredBenchmark, Outputs, Record, benchmark
from omnieval.registry import Registry

TOY_BENCHMARKS: Registry[Benchmark] = Registry("benchmark")


class Caption(Record):
    """One line of captions.jsonl."""

    prompt: str = Field(min_length=1)
    reference: str = Field(min_length=1)


class ToyMetricsConfig(BaseModel):
    """The suite's ``metrics:`` block: whether token F1 ignores case."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    casefold: bool = True


def token_f1(candidate: str, reference: str, *, casefold: bool = True) -> float:
    """Harmonic mean of token precision and recall over the two bags of words.

    >>> token_f1("a red fox", "The red fox")
    0.6666666666666666
    """
    fold = str.casefold if casefold else str
    cand, ref = Counter(fold(candidate).split()), Counter(fold(reference).split())
    common = sum((cand & ref).values())
    return 0.0 if common == 0 else 2 * common / (sum(cand.values()) + sum(ref.values()))


@benchmark(registry=TOY_BENCHMARKS)
class ToyCaption(DeclaredBenchmark):
    """Hooks of toy_caption; its name, dataset marker, systems and headline are in benchmark.yaml."""

    record = Caption
    targets = ("reference",)
    metrics_config = ToyMetricsConfig
    score_range: ClassVar[Mapping[str, tuple[float, float]]] = {"token_f1": (0.0, 1.0)}

    def score(self, record: Caption, outputs: Outputs, config: ToyMetricsConfig) -> dict[str, float]:
        return {"token_f1": token_f1(outputs.text(), record.reference, casefold=config.casefold)}
