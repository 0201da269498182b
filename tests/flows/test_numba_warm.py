"""``python -m omnieval.flows.numba_warm`` leaves a complete numba cache before parallel work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_warm_writes_every_kernel_cache_in_one_process(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "omnieval.flows.numba_warm"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "numba kernels compiled or loaded from cache" in done.stdout
    kernels = {p.name.rsplit("-", 1)[0] for p in cache.rglob("*.nbi")}
    # omnieval's banded pYIN decoder, librosa's parabolic interpolation (the gufunc CI crashed in
    # when two workers compiled it at once), its Viterbi decoder and its beat tracker.
    for kernel in (
        "pitch._banded_viterbi_py",
        "guf-pitch._pi_wrapper",
        "sequence._viterbi",
        "guf-beat.__beat_track_dp",
    ):
        assert kernel in kernels, sorted(kernels)
    compiled = list(cache.rglob("*.nbc"))
    assert compiled, "no compiled kernel was cached"
    # A second run reads the cache: no new compiled objects.
    again = subprocess.run(
        [sys.executable, "-m", "omnieval.flows.numba_warm"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert sorted(cache.rglob("*.nbc")) == sorted(compiled)
