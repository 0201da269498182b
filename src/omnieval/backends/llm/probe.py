"""``python -m omnieval.backends.llm.probe``: does the installed llama.cpp build run on this CPU?

Loads the packaged judge GGUF in a child process and decodes a few tokens. A build compiled for
instructions this machine cannot execute dies with SIGILL in the child, so the parent can report
it (exit 1) instead of crashing; ``scripts/setup.sh`` then rebuilds llama-cpp-python portably.
"""

from __future__ import annotations

import signal
import subprocess
import sys

_CHILD = """
from llama_cpp import Llama
from omnieval.backends.assets import qwen_gguf_path
model = Llama(model_path=str(qwen_gguf_path()), n_ctx=256, use_mmap=False, verbose=False)
model.create_completion("1 2 3", max_tokens=2, temperature=0.0)
"""


def probe(timeout_s: float = 300.0) -> tuple[bool, str]:
    """Run one tiny generation in a child process; return (ok, reason)."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return False, f"no answer within {timeout_s:.0f} s"
    if done.returncode == 0:
        return True, "ok"
    if done.returncode == -signal.SIGILL:
        return False, "illegal instruction (the build uses CPU features this machine does not allow)"
    tail = (done.stderr or "").strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
    return False, tail[0]


def main() -> int:
    ok, reason = probe()
    print(f"llama.cpp probe: {reason}", file=sys.stderr if not ok else sys.stdout)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
