"""Dataset audit flow: the steps of :mod:`omnieval.audit` as Prefect tasks.

Scheduling only; every piece of work is a function of :mod:`omnieval.audit` (the generic checks)
or of the dataset's benchmark (``Benchmark.audit_inputs``: which texts are pages and which are
conditions). The text shingles and the image hashes are independent and run side by side. Run it
with ``omnieval audit DATASET`` (a temporary Prefect server starts in-process when none is set).
Nothing here is retried: the audit reads local files, so a failure is bad data or a bug.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from omnieval.audit import (
    AuditInputs,
    AuditOptions,
    PagePair,
    condition_overlaps,
    default_audit_dir,
    duplicate_clusters,
    image_hashes,
    image_pairs,
    text_pairs,
    write_audit,
)
from omnieval.errors import ConfigError, DataError


def load_audit_inputs(dataset: Path, benchmark: str | None = None) -> AuditInputs:
    """Validate ``dataset`` (its benchmark given or detected from its layout) and read its pages and
    conditions; DataError on an invalid or unrecognised folder, ConfigError on an unknown benchmark."""
    from omnieval.benchmarks import BENCHMARKS, detect_benchmark

    if benchmark is not None:
        if benchmark not in BENCHMARKS:
            raise ConfigError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARKS.names())}")
        bench = BENCHMARKS.get(benchmark)
    else:
        if not dataset.is_dir():
            raise DataError(f"{dataset}: dataset folder not found")
        found = detect_benchmark(dataset)
        if found is None:
            raise DataError(f"{dataset}: no registered benchmark recognises this folder (pass --benchmark)")
        bench = found
    return bench.audit_inputs(bench.load(dataset))


# Inputs are dataclasses of the whole dataset, not worth hashing: no result caching.
def _task(fn: Any, name: str) -> Any:
    return task(name=name, retries=0, cache_policy=NO_CACHE)(fn)


inputs_task = _task(load_audit_inputs, "read dataset")
text_task = _task(text_pairs, "text shingles")
hash_task = _task(image_hashes, "image hashes")
image_task = _task(image_pairs, "image pairs")
overlaps_task = _task(condition_overlaps, "condition overlaps")


@task(name="duplicate clusters", retries=0, cache_policy=NO_CACHE)
def clusters_task(
    inputs: AuditInputs, text: list[PagePair], image: list[PagePair], options: AuditOptions, n_images: int
) -> dict[str, Any]:
    return duplicate_clusters(inputs, [*text, *image], options, n_images=n_images)


@task(name="write audit", retries=0, cache_policy=NO_CACHE)
def write_task(out: Path, clusters: dict[str, Any], overlaps: dict[str, Any]) -> dict[str, Any]:
    return write_audit(out, clusters, overlaps).summary()


@flow(name="omnieval-audit", log_prints=False)
def audit(
    dataset: str,
    out: str | None = None,
    benchmark: str | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Read the dataset -> (text shingle pairs | image hashes -> image pairs) -> clusters, overlaps ->
    ``clusters.json``, ``overlaps.json``, ``audit.html`` in ``out`` (default
    ``state/audit/<dataset folder name>/``). Returns the outcome's summary."""
    settings = AuditOptions(**(options or {}))
    root = Path(dataset)
    folder = Path(out) if out else default_audit_dir(root)
    inputs = inputs_task(root, benchmark)
    text = text_task.submit(inputs, settings)
    hashes = hash_task.submit(inputs) if settings.images else None
    overlaps = overlaps_task.submit(inputs, settings)
    hashed: dict[str, int] = hashes.result() if hashes is not None else {}
    image = image_task(inputs, hashed, settings)
    clusters = clusters_task(inputs, text.result(), image, settings, len(hashed))
    summary: dict[str, Any] = write_task(folder, clusters, overlaps.result())
    return summary
