"""Storybench's appendix analyses; importing this package registers them with :mod:`omnieval.analysis`."""

from omnieval.benchmarks.storybench._analyses import (
    _bootstrap,
    _human,
    _judge_tracks,
    _judges,
    _length,
    _modality,
    _sensitivity,
)
from omnieval.benchmarks.storybench._analyses._context import StoryContext, story_analysis

__all__ = [
    "StoryContext",
    "_bootstrap",
    "_human",
    "_judge_tracks",
    "_judges",
    "_length",
    "_modality",
    "_sensitivity",
    "story_analysis",
]
