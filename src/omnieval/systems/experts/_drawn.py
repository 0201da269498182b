"""The ``drawn`` image expert's config: what an orchestration suite writes as ``image: {name: drawn}``.

The expert itself paints with Omni-StoryBench's sample drawing code, so it lives in that benchmark's
package (:mod:`omnieval.benchmarks.storybench._drawn`) and registers itself in
:data:`~omnieval.systems.experts.IMAGE_EXPERTS` when storybench is imported. The config stays here,
with the other experts' configs, because the orchestration kinds' configs name it (it is their
default image expert) and a suite must validate without the expert's code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from omnieval.systems.experts._base import ExpertConfig


class DrawnConfig(ExpertConfig):
    """``drawn`` image expert (CPU): no model, the sample's painters."""

    name: Literal["drawn"] = "drawn"
    size: int = Field(default=256, ge=64, le=1024)
    """Output width and height in pixels."""


__all__ = ["DrawnConfig"]
