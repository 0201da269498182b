"""Test-local reference aggregations of the three benchmarks, independent of the package's code.

Each module writes its benchmark's aggregation again from its definitions (FORMATS.md sections 3
and 7, PROTOCOLS.md, docs/analysis.md, docs/prism.md) in plain pandas or plain loops, importing
nothing of ``omnieval``: :mod:`.storybench`, :mod:`.prism`, :mod:`.acbench`. The unit tests of the
package's aggregations compare with them on synthetic tables; the end-to-end tests compare a real
run's ``leaderboard.json`` with them through :func:`check_headline_values`, so an aggregation bug
cannot pass by being checked against itself.
"""

from __future__ import annotations

from ._check import ABS_TOL, REL_TOL, HeadlineMismatch, check_headline_values

__all__ = ["ABS_TOL", "REL_TOL", "HeadlineMismatch", "check_headline_values"]
