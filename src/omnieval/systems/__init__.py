"""Systems under test: the registry, the shared write helpers and the generic ``import`` system.

Each benchmark registers its own reference systems when its package is imported
(:mod:`omnieval.benchmarks`); importing this package registers ``import``.
"""

from omnieval.systems import _import  # noqa: F401  (registration side effect)
from omnieval.systems._base import SYSTEMS, GenerationSummary, System
from omnieval.systems._import import resolve_candidates_root

__all__ = ["SYSTEMS", "GenerationSummary", "System", "resolve_candidates_root"]
