"""Which weights a judge used: revision and weight-file SHA-256, found without loading the model.

For a Hugging Face checkpoint in the local hub cache, a branch name resolves to its commit through
``refs/<branch>``, and every LFS weight file is stored as ``blobs/<sha256>``: the hashes are read
off the file names, so no gigabytes are re-hashed; nothing there touches the network.

A judge behind an already running OpenAI-compatible server is identified by that server instead
(:func:`served_identity`): ``GET /models`` names the model it serves and, for vLLM, the ``root`` it
loaded (the hub id or folder given to ``vllm serve``) and any revision it reports. The local cache
says nothing about what another machine serves, so a server that swaps its model changes the cache
keys and lineage of every later request.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omnieval.backends.llm._types import BackendUnavailable, ModelIdentity

log = logging.getLogger(__name__)

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


LISTING_NOT_OFFERED = frozenset({404, 405, 501})
"""Answers to ``GET /models`` from a server that does not list its models (some hosted APIs)."""


def identity_from_listing(listing: Mapping[str, Any], *, served_model: str, revision: str) -> ModelIdentity:
    """The identity of ``served_model`` in a ``GET /models`` answer.

    The model is the entry's ``root`` when the server gives one (vLLM: what it loaded, whatever name
    it serves it under), else its ``id``; the revision is the entry's own ``revision`` when present,
    else the configured one. A server that lists exactly one model and not under ``served_model``
    (llama.cpp's server answers whatever name is asked) is taken at its word.

    Raises:
        BackendUnavailable: the answer is not a model list, or it lists several models, none of them
            ``served_model``.
    """
    entries = listing.get("data") if isinstance(listing, Mapping) else None
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) and e.get("id") for e in entries):
        raise BackendUnavailable("the server's /models answer is not a model list")
    chosen = next((e for e in entries if e["id"] == served_model), None)
    if chosen is None:
        if len(entries) != 1:
            served = ", ".join(sorted(str(e["id"]) for e in entries)) or "none"
            raise BackendUnavailable(f"the server does not serve {served_model!r} (it serves: {served})")
        chosen = entries[0]
        log.warning("server lists %r, not %r; identifying the judge by it", chosen["id"], served_model)
    model = str(chosen.get("root") or chosen["id"])
    return ModelIdentity(model=model, revision=str(chosen.get("revision") or revision))


def served_identity(
    base_url: str,
    *,
    model: str,
    served_model: str | None = None,
    revision: str = "",
    api_key_env: str | None = None,
    timeout_s: float = 30.0,
) -> ModelIdentity:
    """Ask the server at ``base_url`` (``.../v1``) which model it serves: :func:`identity_from_listing`.

    A server without a model list (HTTP 404/405/501) keeps the configured identity
    (:func:`hf_identity`), with a warning. The API key is read from ``api_key_env`` for this request
    only and never appears in messages.

    Raises:
        BackendUnavailable: the server cannot be reached, refuses the request, or does not serve the model.
    """
    import httpx

    headers: dict[str, str] = {}
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise BackendUnavailable(f"the API key variable ${api_key_env} is not set")
        headers["Authorization"] = f"Bearer {key}"
    url = base_url.rstrip("/") + "/models"
    try:
        response = httpx.get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise BackendUnavailable(
            f"cannot ask {_without_userinfo(url)} which model it serves: {type(exc).__name__}"
        ) from None
    if response.status_code in LISTING_NOT_OFFERED:
        log.warning(
            "%s lists no models (HTTP %d): %s identified from its configuration",
            _without_userinfo(url),
            response.status_code,
            model,
        )
        return hf_identity(model, revision)
    if response.status_code != 200:
        raise BackendUnavailable(f"{_without_userinfo(url)} answered HTTP {response.status_code}")
    try:
        listing = response.json()
    except ValueError:
        raise BackendUnavailable(f"{_without_userinfo(url)} did not answer JSON") from None
    return identity_from_listing(listing, served_model=served_model or model, revision=revision)


def _without_userinfo(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
