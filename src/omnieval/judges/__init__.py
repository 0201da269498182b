"""LLM-as-judge: panels, prompt templates, the validity ledger, repair and a response cache.

Public entry points:

- :func:`run_judges` judges every system's candidates with one panel (model-major, cached).
- :func:`panel_names` / :func:`load_panel` list and load the judge panels.
- :func:`parse_verdict` reads one raw judge answer (what ``omnieval judge parse`` shows).
- :func:`combine_judges` shows the protocol's panel rule (equal-weight mean of judge means) per
  system and track, computed by :mod:`omnieval.analysis` (the one implementation of both policies).
- :func:`merge_panel_tags` merges the MLflow tags of several panels' runs.
- :func:`run_drift_check` re-judges the pinned drift anchors and compares; :func:`pin_anchors`
  (``omnieval judge pin-anchors``) pins them, to :func:`pinned_path`.
- :func:`register_templates` is how a benchmark hands its rubrics (:class:`PromptTemplate`) to the
  judges when its package is imported; :func:`template` and :func:`template_catalog` read them.

The rubric wording is the benchmark's (Omni-StoryBench's registers when ``omnieval.benchmarks`` is
imported); this package names no benchmark. Importing it loads no model runtime; backends are
imported when a panel runs.
"""

from __future__ import annotations

from omnieval.judges._combine import combine_judges
from omnieval.judges._drift import DriftSettings, DriftSuite, pin_anchors, pinned_path, run_drift_check
from omnieval.judges._panels import JudgeConfig, PanelConfig, TrackConfig, load_panel, panel_names
from omnieval.judges._parse import ParseResult, parse_verdict
from omnieval.judges._render import Framing, JudgeInputs, render_messages
from omnieval.judges._repair import RepairOutcome, judge_repair
from omnieval.judges._rubrics import (
    PromptTemplate,
    Section,
    criteria_list,
    register_templates,
    registered_benchmark,
    repair_prompt_sha256,
    schema_example,
    template,
    template_catalog,
)
from omnieval.judges._run import JUDGMENT_COLUMNS, JudgeResult, merge_panel_tags, run_judges
from omnieval.judges._stream import StreamResult, read_stream, stream_judges
from omnieval.judges._tracks import TRACK_NAMES, TRACKS, repair_schema, verdict_schema

__all__ = [
    "JUDGMENT_COLUMNS",
    "TRACKS",
    "TRACK_NAMES",
    "DriftSettings",
    "DriftSuite",
    "Framing",
    "JudgeConfig",
    "JudgeInputs",
    "JudgeResult",
    "PanelConfig",
    "ParseResult",
    "PromptTemplate",
    "RepairOutcome",
    "Section",
    "StreamResult",
    "TrackConfig",
    "combine_judges",
    "criteria_list",
    "judge_repair",
    "load_panel",
    "merge_panel_tags",
    "panel_names",
    "parse_verdict",
    "pin_anchors",
    "pinned_path",
    "read_stream",
    "register_templates",
    "registered_benchmark",
    "render_messages",
    "repair_prompt_sha256",
    "repair_schema",
    "run_drift_check",
    "run_judges",
    "schema_example",
    "stream_judges",
    "template",
    "template_catalog",
    "verdict_schema",
]
