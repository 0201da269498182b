"""Which weights a judge used: revision and weight-file SHA-256, found without loading the model.

For a Hugging Face checkpoint in the local hub cache, a branch name resolves to its commit through
``refs/<branch>``, and every LFS weight file is stored as ``blobs/<sha256>``: the hashes are read
off the file names, so no gigabytes are re-hashed. Nothing here touches the network.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from omnieval.backends.llm._types import ModelIdentity

_SHA1 = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")


def hf_hub_cache() -> Path:
    """The local Hugging Face hub cache (``HF_HUB_CACHE``, ``HF_HOME/hub`` or ``~/.cache/huggingface/hub``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(home) / "hub"


def _repo_dir(model: str) -> Path:
    return hf_hub_cache() / ("models--" + model.replace("/", "--"))


def resolve_revision(model: str, revision: str) -> str:
    """The commit a branch or tag points to in the local cache; the input unchanged when unknown."""
    wanted = revision or "main"
    if _SHA1.fullmatch(wanted):
        return wanted
    ref = _repo_dir(model) / "refs" / wanted
    try:
        commit = ref.read_text(encoding="utf-8").strip()
    except OSError:
        return revision
    return commit if _SHA1.fullmatch(commit) else revision


def _weight_hashes(folder: Path) -> dict[str, str]:
    from omnieval.backends.assets import file_sha256

    hashes: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if not path.name.endswith(WEIGHT_SUFFIXES) or not path.is_file():
            continue
        target = path.resolve()
        # Hub snapshots link to blobs named by their SHA-256: read the hash off the name.
        if _SHA256.fullmatch(target.name):
            hashes[path.relative_to(folder).as_posix()] = target.name
        else:
            hashes[path.relative_to(folder).as_posix()] = file_sha256(path)
    return hashes


def hf_identity(model: str, revision: str) -> ModelIdentity:
    """Identity of a hub checkpoint from the local cache (commit and weight hashes when present)."""
    commit = resolve_revision(model, revision)
    snapshot = _repo_dir(model) / "snapshots" / commit if commit else None
    weights = _weight_hashes(snapshot) if snapshot is not None and snapshot.is_dir() else {}
    return ModelIdentity(model=model, revision=commit or revision, weights_sha256=weights)


def local_identity(model: str, revision: str, folder: str | Path) -> ModelIdentity:
    """Identity of a checkpoint in a local folder (weights hashed, memoized beside big files)."""
    path = Path(folder).expanduser()
    weights = _weight_hashes(path) if path.is_dir() else {}
    return ModelIdentity(model=model, revision=revision, weights_sha256=weights)
