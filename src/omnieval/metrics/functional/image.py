"""Image-image similarity: cosine of L2-normalized embeddings (appendix E.1)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def cosine_similarity(a: npt.NDArray[np.floating[Any]], b: npt.NDArray[np.floating[Any]]) -> float:
    """Cosine of two embedding vectors, shape ``(d,)`` each; in [-1, 1].

    Example:
        >>> cosine_similarity(np.array([1.0, 0.0]), np.array([1.0, 1.0]))
        0.7071067811865475
    """
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        raise ValueError("cosine similarity of a zero vector is undefined")
    return float(np.clip(np.dot(a / na, b / nb), -1.0, 1.0))
