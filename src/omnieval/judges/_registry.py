"""The judge registry (``models/judges.yaml``): pinned revisions and expected weight hashes per judge id.

The file is data kept next to the other versioned model files. It is looked up at
``$OMNIEVAL_JUDGE_REGISTRY``, else ``models/judges.yaml`` under the working directory, else under the
source checkout; without it, panels run with the revisions their own config gives.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnieval.errors import ConfigError


class RegistryEntry(BaseModel):
    """One judge checkpoint."""

    model_config = ConfigDict(frozen=True, extra="allow")

    revision: str | None = None
    """Pinned commit, tag or package version; None = not pinned."""
    weights_sha256: dict[str, str] = Field(default_factory=dict)
    """Weight file (relative name) -> expected SHA-256."""


def registry_path() -> Path | None:
    """Where the registry file is, or None when there is none."""
    env = os.environ.get("OMNIEVAL_JUDGE_REGISTRY")
    candidates = [Path(env)] if env else []
    candidates += [
        Path.cwd() / "models" / "judges.yaml",
        Path(__file__).resolve().parents[3] / "models" / "judges.yaml",
    ]
    return next((p for p in candidates if p.is_file()), None)


@lru_cache(maxsize=4)
def _load(path: Path, mtime_ns: int) -> dict[str, RegistryEntry]:
    import yaml

    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        judges = raw.get("judges") or {}
        return {str(k): RegistryEntry.model_validate(v or {}) for k, v in judges.items()}
    except (yaml.YAMLError, AttributeError, ValidationError) as exc:
        raise ConfigError(f"{path}: invalid judge registry: {exc}") from None


def judge_registry() -> dict[str, RegistryEntry]:
    """Judge id -> registry entry ({} when no registry file exists)."""
    path = registry_path()
    if path is None:
        return {}
    return _load(path, path.stat().st_mtime_ns)


def weights_verified(expected: dict[str, str], actual: dict[str, str]) -> bool | None:
    """True when every expected file hash matches, False on any mismatch or missing file, None if nothing to check."""
    if not expected or not actual:
        return None
    return all(actual.get(name) == sha for name, sha in expected.items())
