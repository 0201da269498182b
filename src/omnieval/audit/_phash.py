"""Perceptual image hashes (DCT pHash) for the dataset audit, with numpy, scipy and Pillow only.

The algorithm is the common pHash (the one the ``imagehash`` package calls ``phash``; that package
is not in the lock): grey levels, resized to 32 x 32, a 2-D type-II DCT, the 8 x 8 lowest-frequency
block, and one bit per coefficient, set when it is above the block's median. Re-encoding, mild
resizing, brightness and contrast changes move few of the 64 bits; a different picture moves about
half of them, so a small Hamming distance flags a republished or lightly edited illustration.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image
from scipy.fft import dct

HASH_SIZE = 8
"""Side of the low-frequency DCT block: the hash has ``HASH_SIZE**2`` = 64 bits."""
RESIZE = 32
"""Side of the grey image the DCT reads (four times the hash side, as in the usual pHash)."""

FloatArray = npt.NDArray[np.float64]


def phash_pixels(pixels: npt.ArrayLike) -> int:
    """The 64-bit pHash of a ``RESIZE`` x ``RESIZE`` array of grey levels.

    Bit ``63 - (8 * row + col)`` (row-major, first coefficient in the most significant bit) is set
    when DCT coefficient ``(row, col)`` of the low-frequency block is above the block's median.
    """
    grey = np.asarray(pixels, dtype=np.float64)
    if grey.shape != (RESIZE, RESIZE):
        raise ValueError(f"expected a {RESIZE}x{RESIZE} array, got {grey.shape}")
    coefficients = dct(dct(grey, axis=0, type=2), axis=1, type=2)
    low: FloatArray = coefficients[:HASH_SIZE, :HASH_SIZE]
    bits = (low > np.median(low)).ravel()
    value = 0
    for bit in bits:
        value = (value << 1) | int(bit)
    return value


def phash_image(image: Image.Image) -> int:
    """The pHash of a Pillow image (any mode; transparency is dropped, grey levels are read)."""
    grey = image.convert("L").resize((RESIZE, RESIZE), Image.Resampling.LANCZOS)
    return phash_pixels(np.asarray(grey, dtype=np.float64))


def phash_file(path: Path) -> int:
    """The pHash of the image file at ``path``."""
    with Image.open(path) as image:
        return phash_image(image)


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two hashes."""
    return (a ^ b).bit_count()


def close_pairs(hashes: dict[str, int], max_distance: int) -> list[tuple[str, str, int]]:
    """Every pair of keys whose hashes differ in at most ``max_distance`` bits, as ``(a, b, distance)``.

    All pairs are compared at once with numpy (1,800 images are 1.6 million XORs, a few
    milliseconds); pairs come in the keys' order.
    """
    keys = list(hashes)
    if len(keys) < 2:
        return []
    values = np.array([hashes[k] for k in keys], dtype=np.uint64)
    distance = np.bitwise_count(values[:, None] ^ values[None, :])
    rows, cols = np.nonzero(np.triu(distance <= max_distance, k=1))
    return [
        (keys[i], keys[j], int(distance[i, j])) for i, j in zip(rows.tolist(), cols.tolist(), strict=True)
    ]
