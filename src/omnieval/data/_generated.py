"""Write a generated dataset folder (a benchmark's bundled sample) without ever leaving half of one.

Every sample generator owns a fixed set of top-level entries in its output folder. It refuses a
folder holding anything else (that would be someone's data), builds the new sample in a scratch
folder beside the output, optionally validates it there, and only then swaps its entries in, so a
generator that fails part-way (a missing espeak-ng, a validation error) leaves an earlier sample
as it was.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from omnieval.errors import DataError, OmnievalError


def refuse_foreign(out: Path, owned: Collection[str]) -> None:
    """Raise when ``out`` exists and holds a top-level entry the generator does not own.

    Raises:
        DataError: ``out`` exists and is not a folder.
        OmnievalError: naming the foreign entries (sorted).
    """
    if out.exists() and not out.is_dir():
        raise DataError(f"{out} exists and is not a folder: the sample is written into a folder")
    if out.exists():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in owned)
        if foreign:
            raise OmnievalError(f"{out} holds files the sample generator does not own: {', '.join(foreign)}")


@contextmanager
def replace_owned(
    out: Path, owned: Collection[str], *, validate: Callable[[Path], Sequence[str]] | None = None
) -> Iterator[Path]:
    """Yield a scratch folder beside ``out``; when the block succeeds, its entries replace ``out``'s.

    The entries of ``owned`` are removed from ``out`` first (so an entry the new sample no longer
    writes does not linger), then the scratch folder's content is copied in. When the block
    raises, ``out`` is untouched and the scratch folder is removed.

    Args:
        out: The output folder (created when missing); check it with :func:`refuse_foreign` first.
        owned: The top-level entries the generator owns.
        validate: Run on the scratch folder after the block; the problems it returns (any) stop the
            swap with an :class:`~omnieval.errors.OmnievalError` listing them.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as scratch:
        tmp = Path(scratch)
        yield tmp
        if validate is not None:
            problems = validate(tmp)
            if problems:
                raise OmnievalError("the generated sample fails validation:\n" + "\n".join(problems))
        for name in owned:
            old = out / name
            shutil.rmtree(old) if old.is_dir() else old.unlink(missing_ok=True)
        shutil.copytree(tmp, out, dirs_exist_ok=True)
