"""PRISM-Bench's departures from its paper's protocol, declared once (FORMATS.md section 12).

A packaged panel's own departure is an entry of :data:`PANEL_DEVIATIONS` (it applies when the run
judges with that panel); every other is a function of the run's settings that returns its
:class:`Deviation` when the run has it and None otherwise; :func:`prism_deviations` lists them in
this order. The run's
``lineage.json``, ``report.html``, ``omnieval lineage`` and the MLflow tag ``omnieval.deviations``
all show the list this module returns (through ``Benchmark.deviation_ledger``).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from omnieval.benchmarks._base import RunSettings
from omnieval.lineage import Deviation

CPU_PANEL = "cpu-cascade"
"""The offline panel: the packaged 1.5B text model reads facts measured from each clip."""

OMNI_PANEL = "omni"
"""Qwen3-Omni behind an OpenAI-compatible server: one of the paper's ablation judges."""

ABLATION_PANEL = "ablation"
"""The paper's ablation judges; one model id is our guess."""

PAPER_PANELS = frozenset({"paper", ABLATION_PANEL})
"""The panels whose judges are the paper's (its final judge and its ablation)."""

PACKAGED_PANELS = frozenset({CPU_PANEL, OMNI_PANEL, *PAPER_PANELS})

PANEL_DEVIATIONS: dict[str, Deviation] = {
    # The cpu-cascade panel reads measured facts instead of watching and hearing the clips.
    CPU_PANEL: Deviation(
        "judge-substitute-cpu",
        "The cpu-cascade panel is a cascade, not the paper's omni judge (Gemini-3.1-pro-preview): its "
        "packaged Qwen2.5-Coder-1.5B text model reads audio and frame facts measured from each clip "
        "of the blinded pair instead of watching and hearing it.",
        "Its scores are a smoke test of the protocol: it cannot hear timbre or see lips, so compare them "
        "only with other cpu-cascade runs, never with the paper's.",
    ),
    # The omni panel runs one of the paper's ablation judges as the judge.
    OMNI_PANEL: Deviation(
        "judge-substitute-omni",
        "Qwen3-Omni-30B-A3B-Instruct served by vLLM judges (the omni panel) instead of the paper's final "
        "judge Gemini-3.1-pro-preview; the paper ran it only in its judge ablation.",
        "Its scores are not the paper's judge's; the paper's ablation compares the two judges' stability.",
    ),
    # The ablation's "Gemini-3.1 Flash" runs under a model id the paper does not give.
    ABLATION_PANEL: Deviation(
        "judge-ablation-model-id",
        "The ablation's Gemini-3.1 Flash runs as gemini-3.1-flash-lite-preview, our guess at an API id "
        "the paper does not give.",
        "That judge's ablation row may come from another model than the paper's.",
    ),
}
"""A packaged panel's departure, in ledger order: it applies when the run judges with that panel."""


def panel_deviations(run: RunSettings) -> list[Deviation]:
    """The :data:`PANEL_DEVIATIONS` of the panels ``run`` judges with."""
    return [deviation for panel, deviation in PANEL_DEVIATIONS.items() if panel in run.panels]


def judge_panel_custom(run: RunSettings) -> Deviation | None:
    """A panel file of one's own."""
    custom = [p for p in run.panels if p not in PACKAGED_PANELS]
    if not custom:
        return None
    return Deviation(
        "judge-panel-custom",
        f"Judged by {', '.join(custom)}, not the paper's judge (Gemini-3.1-pro-preview) or its ablation.",
        "Those judges' scores are not the paper's judge's: compare them only with runs of the same panel.",
    )


def prompt_paraphrase(run: RunSettings) -> Deviation | None:
    """Every panel's prompts are the project's wording of the paper's appendix C."""
    if not run.panels:
        return None
    return Deviation(
        "prompt-paraphrase",
        "Judge prompts and criteria (criteria.yaml) paraphrase the paper's appendix C in the project's own "
        "words (same dimensions, 35 criteria, tags, two stages, 0-10 scale); the paper's sentences are "
        "not used.",
        "Judge scores may differ from those the paper's exact wording would give; the size of that "
        "difference is not measured.",
    )


def per_subset_limit(run: RunSettings) -> Deviation | None:
    """``metrics.max_per_subset``: only a prefix of each subset is judged."""
    limit = _max_per_subset(run.metrics)
    if limit is None:
        return None
    first = "the first instance" if limit == 1 else f"the first {limit} instances"
    return Deviation(
        "per-subset-limit",
        f"Only {first} of each subset {'is' if limit == 1 else 'are'} judged (metrics.max_per_subset "
        f"{limit}), to keep a CPU run short.",
        f"Per-subset means and the calibration's global ground-truth mean are over at most {limit} "
        f"instance{'' if limit == 1 else 's'} per subset; left-out instances have no rows.",
    )


def _max_per_subset(metrics: BaseModel | None) -> int | None:
    # Read by name: PrismMetricsConfig lives in the package's __init__, which imports this module.
    value = getattr(metrics, "max_per_subset", None)
    return value if isinstance(value, int) else None


DECLARED: tuple[Callable[[RunSettings], Deviation | None], ...] = (
    judge_panel_custom,
    prompt_paraphrase,
    per_subset_limit,
)
"""The departures that depend on more than one panel, in the order the ledger lists them (after
:data:`PANEL_DEVIATIONS`)."""


def prism_deviations(run: RunSettings) -> list[Deviation]:
    """The declared deviations that apply to ``run``.

    Example:
        >>> [d.id for d in prism_deviations(RunSettings(panels=("cpu-cascade",)))]
        ['judge-substitute-cpu', 'prompt-paraphrase']
        >>> prism_deviations(RunSettings(panels=()))
        []
    """
    return [*panel_deviations(run), *(d for declared in DECLARED if (d := declared(run)) is not None)]
