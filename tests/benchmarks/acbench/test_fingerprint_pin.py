"""The OmniACBench sample's dataset digest (lineage) and MLflow dataset table, pinned from the code
before the loader moved onto the record framework: a port must not move either by a byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from omnieval.benchmarks import BENCHMARKS

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "acbench-sample"
DIGEST = "d2dac96f2f2e92721ccdee835fe7ff40277f1c6ba6cdd8f27722e7442b1a63f7"
FRAME_SHA256 = "8e9ae1326e37ef4decbed55330696ddb00e25ce3f2f371a06e07e21dbaf78e60"

pytestmark = pytest.mark.skipif(not (SAMPLE / "manifest.jsonl").is_file(), reason="no committed sample")


def test_sample_digest_is_pinned() -> None:
    bench = BENCHMARKS.get("acbench")
    manifest = bench.fingerprint(bench.load(SAMPLE))
    assert manifest.digest == DIGEST
    assert (manifest.n_rows, len(manifest.files), len(manifest.texts)) == (40, 80, 120)


def test_sample_frame_is_pinned() -> None:
    frame = BENCHMARKS.get("acbench").dataset_frame(SAMPLE)
    assert hashlib.sha256(frame.to_csv().encode()).hexdigest() == FRAME_SHA256
