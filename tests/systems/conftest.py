"""Shared fixtures of the systems tests: another Python environment, the bundled samples' instances,
and a stdlib-only generator script that a ``command`` system runs in that environment."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = {name: ROOT / "data" / f"{name}-sample" for name in ("storybench", "acbench", "prism")}

#: A generator that needs nothing but the standard library (and ffmpeg for video). It appends one
#: line per call to $GEN_LOG, keeps a copy of every task.json and input listing it saw in
#: $GEN_SEEN, crashes (exit 3) on the example whose index is $GEN_CRASH and hangs on $GEN_HANG.
GENERATOR = r"""
import json, math, os, struct, subprocess, sys, time, wave

input_dir, output_dir = sys.argv[1], sys.argv[2]
with open(os.path.join(input_dir, "task.json"), encoding="utf-8") as fh:
    task = json.load(fh)
tag = f"{task['benchmark']}-{task['index']}-{task['condition'] if isinstance(task['condition'], str) else ''}"
with open(os.environ["GEN_LOG"], "a", encoding="utf-8") as fh:
    fh.write(tag + "\n")
seen = os.environ.get("GEN_SEEN")
if seen:
    os.makedirs(seen, exist_ok=True)
    with open(os.path.join(seen, tag + ".json"), "w", encoding="utf-8") as fh:
        json.dump({"task": task, "files": sorted(os.listdir(input_dir)), "python": sys.executable,
                   "token": os.environ.get("GEN_TOKEN", "")}, fh)
index = str(task["index"])
if index == os.environ.get("GEN_CRASH"):
    print("loading checkpoint", file=sys.stderr)
    print(f"token was {os.environ.get('GEN_TOKEN', '')}", file=sys.stderr)
    print(f"RuntimeError: out of memory on example {index}", file=sys.stderr)
    sys.exit(3)
if index == os.environ.get("GEN_HANG"):
    time.sleep(3600)
skip = set(os.environ.get("GEN_SKIP", "").split(","))
outputs = {m: f for m, f in task["outputs"].items() if m not in skip}


def wav(path, seconds=0.6, rate=16000):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        frames = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 220 * i / rate)))
                          for i in range(int(seconds * rate)))
        w.writeframes(frames)


if "text" in outputs:
    with open(os.path.join(output_dir, outputs["text"]), "w", encoding="utf-8") as fh:
        fh.write("The next page follows: " + task["current_text"][:40])
if "image" in outputs:
    # The current page's picture, read from the input folder by the name task.json gives.
    with open(os.path.join(input_dir, task["current_image"]), "rb") as src:
        data = src.read()
    with open(os.path.join(output_dir, outputs["image"]), "wb") as fh:
        fh.write(data)
if "speech" in outputs:
    wav(os.path.join(output_dir, outputs["speech"]))
if "video" in outputs:
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=blue:s=64x48:d=1:r=10",
         "-f", "lavfi", "-i", "sine=frequency=330:duration=1", "-shortest",
         "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac",
         os.path.join(output_dir, outputs["video"])],
        check=True,
    )
if os.environ.get("GEN_BROKEN_IMAGE") and "image" in outputs:
    with open(os.path.join(output_dir, outputs["image"]), "wb") as fh:
        fh.write(b"not a png")
with open(os.path.join(output_dir, "notes.log"), "w") as fh:
    fh.write("extra file the system ignores\n")
"""


@pytest.fixture(scope="session")
def foreign_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a fresh venv (stdlib only), not omnieval's: a system in its own environment."""
    base = shutil.which("python3") or sys.executable
    venv = tmp_path_factory.mktemp("foreign") / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    assert python.exists(), f"venv at {venv} has no bin/python"
    return python


@pytest.fixture
def generator_script(tmp_path: Path) -> Path:
    """A private copy of :data:`GENERATOR` (a test may edit it)."""
    path = tmp_path / "generate.py"
    path.write_text(GENERATOR, encoding="utf-8")
    return path


def load_instances(benchmark: str) -> tuple[Any, ...]:
    """The sample's instances, through the benchmark's strict loader."""
    from omnieval.benchmarks import get_benchmark

    bench = get_benchmark(benchmark)
    return tuple(bench.instances(bench.load(SAMPLES[benchmark])))


@pytest.fixture(scope="session")
def storybench_instances() -> tuple[Any, ...]:
    return load_instances("storybench")


@pytest.fixture(scope="session")
def acbench_instances() -> tuple[Any, ...]:
    return load_instances("acbench")


@pytest.fixture(scope="session")
def prism_instances() -> tuple[Any, ...]:
    """The first five PRISM sample instances, read from the manifest without probing every clip
    (the strict loader ffprobes all 29 clips, ~7 s; the visible task needs the caption only)."""
    from omnieval.benchmarks.prism._record import PrismInstance

    root = SAMPLES["prism"]
    lines = (root / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for index, line in enumerate(lines[:5]):
        rec = json.loads(line)
        out.append(
            PrismInstance(
                id=rec["id"],
                index=index,
                subset=rec["subset"],
                active_tags=tuple(rec["active_tags"]),
                caption=rec["caption"],
                reference_video=(root / rec["reference_video"]).resolve(),
                line=index + 1,
                speaker=rec.get("speaker", ""),
                notes=rec.get("notes", ""),
            )
        )
    return tuple(out)
