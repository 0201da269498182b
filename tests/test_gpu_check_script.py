"""scripts/gpu_check.sh on a machine without a GPU: it says so and stops before running anything."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.sh"


@pytest.mark.parametrize("nvidia_smi", [None, "echo 'No devices were found'; exit 6"])
def test_without_a_gpu_the_check_exits_with_a_clear_message(tmp_path: Path, nvidia_smi: str | None) -> None:
    """No ``nvidia-smi`` at all, or one that lists no GPU: exit 3, a message, no work folder."""
    path = os.environ.get("PATH", "")
    path = ":".join(p for p in path.split(":") if not (Path(p) / "nvidia-smi").exists())
    if nvidia_smi is not None:
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "nvidia-smi").write_text(f"#!/bin/sh\n{nvidia_smi}\n")
        (fake / "nvidia-smi").chmod(0o755)
        path = f"{fake}:{path}"
    env = {**os.environ, "PATH": path, "TMPDIR": str(tmp_path), "OMNIEVAL_VLLM_BIN": "/bin/true"}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert "no NVIDIA GPU on this machine" in done.stderr and "nothing was measured" in done.stderr
    assert not list(tmp_path.glob("omnieval-gpu-check.*"))  # stopped before creating its work folder
