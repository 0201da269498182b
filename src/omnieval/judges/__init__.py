"""LLM-as-judge: panels, prompt templates, the validity ledger, repair and a response cache.

Public entry points:

- :func:`run_judges` judges every system's candidates with one panel (model-major, cached).
- :func:`panel_names` / :func:`load_panel` list and load the judge panels; a benchmark's package
  ships its panels' YAML files and names them with :func:`register_panels` when imported.
- :func:`parse_verdict` reads one raw judge answer (what ``omnieval judge parse`` shows).
- :func:`merge_panel_tags` merges the MLflow tags of several panels' runs.
- :func:`run_drift_check` re-judges the pinned drift anchors and compares; :func:`pin_anchors`
  (``omnieval judge pin-anchors``) pins them, to :func:`pinned_path`.
- :func:`check_known_set` runs a panel's judges on a benchmark's pinned known set (ground truth vs
  damaged copies, :class:`KnownSetRunner`) and grades them against accuracy floors (``omnieval judge
  check``); :func:`judge_known_set` turns any benchmark's judge runner's scores into the per-pair
  verdicts, by the benchmark's :class:`PairRule`; :func:`merge_meta_eval` / :func:`meta_eval_failures` put the result in ``health.json``
  and the nightly verdict.
- :func:`register_tracks` is how a benchmark hands its judge tracks (:class:`TrackSpec`: criterion
  keys and the outputs judged) and its row -> :class:`JudgeInputs` function to the judges when its
  package is imported. Tracks are kept per benchmark, so several benchmarks' live in one process:
  :func:`tracks_of` reads one benchmark's (:class:`BenchmarkTracks`), :data:`TRACKS` and
  :func:`track_names` every registered track by name.
- :func:`register_templates` is how a benchmark hands its rubrics (:class:`PromptTemplate`) to the
  judges, after its tracks; :func:`template` and :func:`template_catalog` read them.

A benchmark with its own prompts and answer shape (e.g. two clips judged in one answer) builds on
the same runner: :class:`CallRunner` (cache, model groups, batches, retries, availability,
:meth:`~CallRunner.ask` to build and key a request, :meth:`~CallRunner.repair_round`) with its
jobs :class:`CallJob` and :class:`RepairJob`, :func:`read_answer` (format fixes, strict content)
with :func:`read_per_candidate` for answers scoring several outputs, :func:`parse_score` (the one
score reader, in the benchmark's range), :func:`decide_repair` (the one repair rule). Blind pairs
(a candidate and a reference in one answer) run on :class:`PairRunner` (the same runner, with
:func:`pair_calls`, :class:`PairPanelConfig`, :func:`pair_score_rows` and :func:`swap_summary`);
the judgment columns' shared tail is :data:`LEDGER_TAIL`.

Tracks and rubric wording are the benchmark's (registered when ``omnieval.benchmarks`` is imported);
this package names no benchmark. Importing it loads no model runtime; backends are
imported when a panel runs.
"""

from __future__ import annotations

from omnieval.judges._budget import JudgeBudget, SpendTracker, active_limit, spending_limit
from omnieval.judges._cache import DiskCache, cache_key, canonical_json, request_material
from omnieval.judges._calls import (
    LEDGER_TAIL,
    BackendPool,
    CallCounters,
    CallJob,
    CallRunner,
    CallState,
    RepairJob,
    RepairLog,
    backend_group_key,
    judge_lineage_entry,
    judge_tags,
    judges_lineage,
    mlflow_tag_part,
    quick_unavailable,
    role_lineage,
    status_ledger,
)
from omnieval.judges._drift import (
    AnchorTracks,
    DriftSettings,
    DriftSuite,
    JudgedPanel,
    PanelJudge,
    pin_anchors,
    pinned_path,
    run_drift_check,
)
from omnieval.judges._health import judge_health
from omnieval.judges._meta import (
    DEFAULT_FLOOR,
    VALUED,
    Floors,
    JudgedSet,
    KnownItem,
    KnownPair,
    KnownSetManifest,
    KnownSetRunner,
    PairRule,
    PairVerdict,
    ScoreKey,
    VariantScore,
    VariantScores,
    check_known_set,
    judge_identity,
    judge_known_set,
    load_known_set,
    merge_meta_eval,
    meta_eval_failures,
    meta_eval_metrics,
    missing_sides,
    pair_figures,
    pair_verdict,
    panel_identity,
    pin_known_set,
    track_panel_file,
)
from omnieval.judges._pairwise import (
    PairCall,
    PairedReading,
    PairJudgeResult,
    PairOrder,
    PairPanelConfig,
    PairRunner,
    RepairPrompt,
    describe_pair_panel,
    load_panel_file,
    pair_calls,
    pair_score_rows,
    pair_tags,
    swap_summary,
)
from omnieval.judges._panels import (
    JudgeConfig,
    PanelConfig,
    TrackConfig,
    describe_panels,
    load_panel,
    panel_names,
    register_panels,
)
from omnieval.judges._parse import (
    AnswerReading,
    ParseResult,
    expand_dotted,
    find_alias,
    find_keys,
    normalize_key,
    parse_score,
    parse_verdict,
    read_answer,
    read_per_candidate,
    read_scored_leaf,
)
from omnieval.judges._render import Framing, JudgeInputs, render_messages
from omnieval.judges._repair import (
    RepairOutcome,
    decide_repair,
    invented_rationales,
    invented_scores,
    judge_repair,
)
from omnieval.judges._rubrics import (
    REPAIR_SYSTEM,
    PromptTemplate,
    PromptText,
    Section,
    criteria_list,
    prompt_text,
    register_templates,
    registered_benchmark,
    registered_templates,
    repair_prompt_sha256,
    schema_example,
    template,
    template_catalog,
)
from omnieval.judges._run import (
    JUDGMENT_COLUMNS,
    JUDGMENT_SCHEMA,
    LINE_FIT_KEY,
    DescribeImage,
    JudgeResult,
    merge_panel_tags,
    run_judges,
)
from omnieval.judges._stream import StreamResult, read_stream, stream_judges
from omnieval.judges._tracks import (
    TRACKS,
    BenchmarkTracks,
    TrackSpec,
    criteria_schema,
    register_tracks,
    repair_schema,
    track_benchmarks,
    track_names,
    tracks_of,
    verdict_schema,
)

__all__ = [
    "DEFAULT_FLOOR",
    "JUDGMENT_COLUMNS",
    "JUDGMENT_SCHEMA",
    "LEDGER_TAIL",
    "LINE_FIT_KEY",
    "REPAIR_SYSTEM",
    "TRACKS",
    "VALUED",
    "AnchorTracks",
    "AnswerReading",
    "BackendPool",
    "BenchmarkTracks",
    "CallCounters",
    "CallJob",
    "CallRunner",
    "CallState",
    "DescribeImage",
    "DiskCache",
    "DriftSettings",
    "DriftSuite",
    "Floors",
    "Framing",
    "JudgeBudget",
    "JudgeConfig",
    "JudgeInputs",
    "JudgeResult",
    "JudgedPanel",
    "JudgedSet",
    "KnownItem",
    "KnownPair",
    "KnownSetManifest",
    "KnownSetRunner",
    "PairCall",
    "PairJudgeResult",
    "PairOrder",
    "PairPanelConfig",
    "PairRule",
    "PairRunner",
    "PairVerdict",
    "PairedReading",
    "PanelConfig",
    "PanelJudge",
    "ParseResult",
    "PromptTemplate",
    "PromptText",
    "RepairJob",
    "RepairLog",
    "RepairOutcome",
    "RepairPrompt",
    "ScoreKey",
    "Section",
    "SpendTracker",
    "StreamResult",
    "TrackConfig",
    "TrackSpec",
    "VariantScore",
    "VariantScores",
    "active_limit",
    "backend_group_key",
    "cache_key",
    "canonical_json",
    "check_known_set",
    "criteria_list",
    "criteria_schema",
    "decide_repair",
    "describe_pair_panel",
    "describe_panels",
    "expand_dotted",
    "find_alias",
    "find_keys",
    "invented_rationales",
    "invented_scores",
    "judge_health",
    "judge_identity",
    "judge_known_set",
    "judge_lineage_entry",
    "judge_repair",
    "judge_tags",
    "judges_lineage",
    "load_known_set",
    "load_panel",
    "load_panel_file",
    "merge_meta_eval",
    "merge_panel_tags",
    "meta_eval_failures",
    "meta_eval_metrics",
    "missing_sides",
    "mlflow_tag_part",
    "normalize_key",
    "pair_calls",
    "pair_figures",
    "pair_score_rows",
    "pair_tags",
    "pair_verdict",
    "panel_identity",
    "panel_names",
    "parse_score",
    "parse_verdict",
    "pin_anchors",
    "pin_known_set",
    "pinned_path",
    "prompt_text",
    "quick_unavailable",
    "read_answer",
    "read_per_candidate",
    "read_scored_leaf",
    "read_stream",
    "register_panels",
    "register_templates",
    "register_tracks",
    "registered_benchmark",
    "registered_templates",
    "render_messages",
    "repair_prompt_sha256",
    "repair_schema",
    "request_material",
    "role_lineage",
    "run_drift_check",
    "run_judges",
    "schema_example",
    "spending_limit",
    "status_ledger",
    "stream_judges",
    "swap_summary",
    "template",
    "template_catalog",
    "track_benchmarks",
    "track_names",
    "track_panel_file",
    "tracks_of",
    "verdict_schema",
]
