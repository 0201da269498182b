"""A few scalar headline figures per analysis JSON, for MLflow metrics and quick comparisons."""

from __future__ import annotations

import math
from typing import Any

from omnieval.analysis._runner import ANALYSES


def _get(doc: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(doc, dict):
            doc = doc.get(part)
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            return None
    return doc


def headline_metrics(name: str, doc: Any) -> dict[str, float]:
    """Finite scalar figures of one analysis document, keyed by their dotted path.

    Which figures is the analysis's own ``headline`` (see :func:`omnieval.analysis.analysis`): dotted
    paths into its JSON, or a function of the document. Unregistered analyses have none.
    """
    if name not in ANALYSES:
        return {}
    headline = ANALYSES.get(name).headline
    if callable(headline):
        return headline(doc)
    out: dict[str, float] = {}
    for path in headline:
        v = _get(doc, path)
        if isinstance(v, bool):
            v = float(v)
        if isinstance(v, int | float) and math.isfinite(v):
            out[path] = float(v)
    return out
