"""PRISM-Bench analyses in the shared registry (``omnieval analyze``): ``stability``,
``judge_ablation`` and ``human_preference``. They read prism scores tables only; on another
benchmark's table the runner skips them with that reason. Importing this module registers them."""

from __future__ import annotations

from omnieval.analysis import AnalysisContext, AnalysisResult, Skip, analysis
from omnieval.benchmarks.prism._aggregate import BENCHMARK, prism_scores

PRISM = (BENCHMARK,)

# Both statistics are over the systems under test (ctx.config's diagnostic and reference ids, else
# the benchmark's defaults); with fewer than two they write their top-level ``not_computed`` rather
# than being skipped, so the report can say why.


@analysis(
    "stability",
    summary="prism GT stability over the systems under test: Std, d_bias, d_signal, SNR per subset and dimension (appendix A)",
    benchmarks=PRISM,
)
def stability_analysis(ctx: AnalysisContext) -> AnalysisResult:
    from omnieval.benchmarks.prism._stability import stability

    return AnalysisResult(stability(ctx.scores, facts=ctx.config))


@analysis(
    "judge_ablation",
    summary="prism stability figures per judge panel and per judge, side by side (appendix B)",
    benchmarks=PRISM,
)
def judge_ablation_analysis(ctx: AnalysisContext) -> AnalysisResult:
    from omnieval.benchmarks.prism._stability import judge_ablation

    frame = prism_scores(ctx.scores)
    judges = {(p, j) for p, j in zip(frame["panel"], frame["judge"], strict=True)}
    if len(judges) < 2:
        raise Skip("one judge in the table: nothing to compare (see stability.json for its figures)")
    return AnalysisResult(judge_ablation(ctx.scores, facts=ctx.config))


@analysis(
    "human_preference",
    summary="prism human vs judge agreement in preference direction (GT-vs-model, model-vs-model)",
    benchmarks=PRISM,
    inputs=("humans",),
)
def human_preference_analysis(ctx: AnalysisContext) -> AnalysisResult:
    from omnieval.benchmarks.prism._human import preference_agreement, read_two_stage_export

    if ctx.config.humans is None:
        raise Skip("no human ratings given (--humans LABEL_STUDIO_EXPORT.json of the two-stage interface)")
    export = read_two_stage_export(ctx.config.humans)
    if not export.comparisons:
        raise Skip("the export holds no scored comparison")
    return AnalysisResult(preference_agreement(export, ctx.scores))
