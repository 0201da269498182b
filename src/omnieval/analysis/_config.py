"""Options of the analyses (seeds, draws, cutoffs, optional inputs), validated strictly."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator


class AnalysisConfig(BaseModel):
    """Everything the analyses can be told; the defaults reproduce the paper's settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    """Seed of the paired bootstrap over instances (transitions)."""
    bootstrap_draws: int = Field(default=10_000, ge=10)
    """Bootstrap resamples."""
    level: float = Field(default=0.95, gt=0.0, lt=1.0)
    """Coverage of percentile intervals (score, rank and difference intervals)."""
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    """Significance level used to flag Holm-adjusted paired differences."""
    chunk_elements: int = Field(default=2_000_000, ge=10_000)
    """Memory budget of one bootstrap chunk, in float64 elements (about 8 bytes each): the number of
    resamples per chunk shrinks as the number of instances grows, so memory stays bounded."""
    bottleneck_alphas: tuple[float, ...] = (1 / 3, 0.20, 0.25, 0.40, 0.50)
    """Bottom-fraction cutoffs of the Max Total diagnostic; the first is the headline (tercile)."""
    dirichlet_draws: int = Field(default=10_000, ge=1)
    dirichlet_seed: int = 20260925
    uniform_draws: int = Field(default=10_000, ge=1)
    uniform_seed: int = 20260926
    uniform_low: float = Field(default=0.5, gt=0.0)
    uniform_high: float = Field(default=2.0, gt=0.0)
    m1_bins: int = Field(default=20, ge=2)
    """Narration-length control M1: generated-length quantile bins per judge."""
    m2_bins: int = Field(default=5, ge=2)
    """Narration-length control M2: pooled generated-length quantile bins."""
    m2_min_count: int = Field(default=5, ge=1)
    """M2 keeps a bin only with at least this many valid observations in every system-judge group."""
    top_k: tuple[int, ...] = (5, 10)
    """Top-k set overlaps reported by ranking comparisons."""
    system_groups: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Named subsets of systems (e.g. paradigms): restricted correlations and paradigm tiers."""
    panels: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Judge panels: panel name -> track -> judge id (panel totals and composites in inter_judge); the
    benchmark's analysis context checks the track names before anything is written."""
    humans: Path | None = None
    """Human ratings: a Label Studio JSON export, or per-clip labels as CSV/JSONL, whichever the
    benchmark's human analysis reads (its docs page gives the format)."""
    capabilities: Path | None = None
    """Per-item results of capability diagnostics run outside a suite, as CSV/JSONL (read by the
    benchmark analysis that registers for them; its docs page gives the format)."""
    duplicates: Path | None = None
    """JSON file of internal-duplicate clusters of instance ids (duplicate_sensitivity)."""
    n_instances: int | None = Field(default=None, ge=1)
    """Zero-filled denominator; default the number of distinct instance ids."""
    diagnostic: tuple[str, ...] | None = None
    """Ids of the diagnostic systems (probes scored but kept out of figures over the systems under
    test, as the run's aggregate keeps them out); None = the benchmark's default ids."""
    reference: tuple[str, ...] | None = None
    """Ids of the reference systems (the ground truth as a candidate), kept out the same way; None =
    the benchmark's default ids."""

    @field_validator("bottleneck_alphas")
    @classmethod
    def _alphas(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if not v or any(not 0.0 < a <= 1.0 for a in v):
            raise ValueError("bottleneck_alphas must be non-empty fractions in (0, 1]")
        return v
