"""Compile the numba kernels omnieval's audio metrics use, once, in one process.

librosa (and :mod:`omnieval.metrics.functional.pitch`) compile numba kernels with ``cache=True``:
the first process to use one writes its machine code next to the source. Two processes compiling
the same kernel at once (pytest-xdist workers, Dask workers, parallel commands on a fresh
environment) can interleave those files, and every later process that loads the mixed pair
crashes with a segmentation fault (numba issue 10128; seen on CI as a worker dying inside
``librosa.pyin``). Compiling them here first, before any parallel work starts, leaves a complete
cache that later processes only read.

``python -m omnieval.flows.numba_warm`` runs it (``make setup`` does, and the test suite's
controller does before its workers start). With a warm cache it takes about a second.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

SAMPLE_RATE = 16_000


def _tone(seconds: float, hz: float, dtype: type[np.floating]) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (0.4 * np.sin(2 * np.pi * hz * t)).astype(dtype)


def _kernels() -> list[tuple[str, Callable[[], object]]]:
    """Each call exercises the kernels one metric path compiles, on a short synthetic tone."""
    import librosa

    from omnieval.metrics.functional.pitch import median_f0, yin_f0

    voiced = _tone(1.0, 180.0, np.float32)
    voiced64 = voiced.astype(np.float64)
    return [
        ("pyin (banded decoder)", lambda: median_f0(voiced, decoder="banded")),
        ("pyin (banded decoder, float64)", lambda: median_f0(voiced64, decoder="banded")),
        ("pyin (librosa's dense decoder)", lambda: median_f0(voiced, decoder="dense")),
        ("yin", lambda: yin_f0(voiced)),
        ("trim and split", lambda: (librosa.effects.trim(voiced), librosa.effects.split(voiced))),
        ("spectral flatness", lambda: librosa.feature.spectral_flatness(y=voiced)),
        (
            "viterbi",
            lambda: librosa.sequence.viterbi(
                np.full((3, 8), 1 / 3), librosa.sequence.transition_loop(3, 0.9)
            ),
        ),
        ("local transitions", lambda: librosa.sequence.transition_local(4, 3)),
        ("beat tracking", lambda: librosa.beat.beat_track(y=voiced, sr=SAMPLE_RATE)),
        ("harmonic/percussive split", lambda: librosa.decompose.hpss(np.abs(librosa.stft(voiced)))),
    ]


def warm_numba_kernels(log: Callable[[str], None] | None = None) -> float:
    """Run every kernel once in this process; seconds taken. Safe to call again (cache reads)."""
    start = time.perf_counter()
    for name, run in _kernels():
        step = time.perf_counter()
        run()
        if log is not None:
            log(f"  {name:<32} {time.perf_counter() - step:6.1f} s")
    return time.perf_counter() - start


def main() -> int:
    seconds = warm_numba_kernels(log=print)
    print(f"numba kernels compiled or loaded from cache in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
