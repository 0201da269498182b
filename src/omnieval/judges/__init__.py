"""Storybench LLM-as-judge: rubrics, panels, the validity ledger, repair and a response cache.

Only light modules are imported here; judging itself (:func:`run_judges`) loads its backends lazily.
"""

from __future__ import annotations

from omnieval.judges._parse import ParseResult, parse_verdict
from omnieval.judges._tracks import TRACK_NAMES, TRACKS, verdict_schema

__all__ = [
    "TRACKS",
    "TRACK_NAMES",
    "ParseResult",
    "parse_verdict",
    "verdict_schema",
]
