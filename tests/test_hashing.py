from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from omnieval.hashing import sha256_bytes, sha256_file


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 1 << 20, (3 << 20) + 17])
def test_file_digest_equals_hashlib_over_the_whole_file(tmp_path: Path, size: int) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest() == sha256_bytes(data)


def test_a_known_vector() -> None:
    # FIPS 180-2, appendix B.1
    assert sha256_bytes(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
