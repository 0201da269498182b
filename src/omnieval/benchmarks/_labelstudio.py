"""Reading a Label Studio JSON export: the submitted annotations of one task, checked the same way
for every benchmark's human study (PRISM's side-by-side scores, OmniACBench's Table 4 labels).

Example:
    >>> counts = {"annotations": 0, "skipped": 0}
    >>> task = {"annotations": [{"id": 7, "result": [{"from_name": "x"}]}, {"id": 8, "was_cancelled": True}]}
    >>> [(ann["id"], where) for ann, where, _ in submitted_annotations(task, "export.json: task 1", counts)]
    [(7, 'export.json: task 1 annotation 7')]
    >>> counts
    {'annotations': 2, 'skipped': 1}
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from omnieval.errors import DataError


def submitted_annotations(
    task: Mapping[str, Any], where: str, counts: MutableMapping[str, int]
) -> Iterator[tuple[Mapping[str, Any], str, list[Any]]]:
    """Each annotation of ``task`` that has results: (annotation, where it is, its ``result`` list).

    ``where`` names the task in messages (an annotation adds ``annotation <id>``). ``counts`` gets
    ``annotations`` (every one seen) and ``skipped`` (cancelled or empty ones) added.

    Raises:
        DataError: An annotation that is not an object, or whose ``result`` is not a list.
    """
    for a_idx, ann in enumerate(task.get("annotations") or []):
        counts["annotations"] += 1
        ident = ann.get("id", f"#{a_idx}") if isinstance(ann, Mapping) else f"#{a_idx}"
        a_where = f"{where} annotation {ident}"
        if not isinstance(ann, Mapping):
            raise DataError(f"{a_where}: not an object")
        results = ann.get("result")
        if ann.get("was_cancelled") or not results:
            counts["skipped"] += 1
            continue
        if not isinstance(results, list):
            raise DataError(f"{a_where}: field result: not a list")
        yield ann, a_where, results


__all__ = ["submitted_annotations"]
