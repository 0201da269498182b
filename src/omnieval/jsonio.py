"""Writing JSON files so that a crash never leaves a half-written one.

Every module that writes JSON (stage stamps, dataset manifests, gate results, analysis outputs, the
generated sample) goes through :func:`write_json_atomic`; they differ only in the formatting options
they pass, which keep each file's bytes as they always were.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_json_atomic(
    path: Path | str,
    obj: object,
    *,
    sort_keys: bool = False,
    ensure_ascii: bool = False,
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = str,
) -> Path:
    """Write ``obj`` as 2-space indented JSON plus a newline via a temporary file and a rename.

    The temporary file sits in the target's folder (so the rename is atomic) and is removed when
    serialization or writing fails; the target is then left as it was.

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> write_json_atomic(folder / "a.json", {"b": 1, "a": "é"}, sort_keys=True).read_text()
        '{\\n  "a": "é",\\n  "b": 1\\n}\\n'
    """
    path = Path(path)
    text = (
        json.dumps(
            obj,
            indent=2,
            sort_keys=sort_keys,
            ensure_ascii=ensure_ascii,
            allow_nan=allow_nan,
            default=default,
        )
        + "\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
