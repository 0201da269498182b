#!/usr/bin/env bash
# GPU check (docs/gpu.md): one paper judge, served by vLLM as its panel says, judges the storybench
# sample; then the same judge, same requests, through sequential transformers `generate`; prints
# verdicts per second for both. Meant for a GPU machine with the judge's weights already in the
# Hugging Face cache and vLLM in its own environment ($OMNIEVAL_VLLM_BIN). At most ~10 minutes:
# each phase runs under its own time limit and a phase that runs out is reported as such.
#
#   scripts/gpu_check.sh                      # paper-a, text track (Qwen3-30B-A3B-Instruct-2507)
#   PANEL=paper-c TRACK=integrated scripts/gpu_check.sh
#
# Settings (environment): PANEL (default paper-a), TRACK (text), LIMIT (sample transitions judged by
# vLLM, default 4; three systems each), BASELINE_CALLS (transformers calls, default 3),
# VLLM_PHASE_S (330), BASELINE_PHASE_S (240), PYTHON (.venv/bin/python).
# Exit codes: 0 done, 3 no GPU, 4 no vLLM launcher, 5 a phase failed or ran out of time.
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
PANEL=${PANEL:-paper-a}
TRACK=${TRACK:-text}
LIMIT=${LIMIT:-4}
BASELINE_CALLS=${BASELINE_CALLS:-3}
VLLM_PHASE_S=${VLLM_PHASE_S:-330}
BASELINE_PHASE_S=${BASELINE_PHASE_S:-240}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "gpu_check: no NVIDIA GPU on this machine (nvidia-smi lists none), so nothing was measured." >&2
    echo "gpu_check: run it on a GPU machine with the judge weights in the Hugging Face cache (docs/gpu.md)." >&2
    exit 3
fi
if [ -z "${OMNIEVAL_VLLM_BIN:-}" ] || ! command -v "$OMNIEVAL_VLLM_BIN" >/dev/null 2>&1; then
    echo "gpu_check: set OMNIEVAL_VLLM_BIN to the vllm launcher of the separate vLLM environment (docs/gpu.md)." >&2
    exit 4
fi
nvidia-smi -L

work=$(mktemp -d "${TMPDIR:-/tmp}/omnieval-gpu-check.XXXXXX")
echo "gpu_check: working in $work"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=true \
    PREFECT_SERVER_ANALYTICS_ENABLED=false GX_ANALYTICS_ENABLED=false TOKENIZERS_PARALLELISM=false \
    OMNIEVAL_VLLM_LOG_DIR="$work/vllm-logs"

# Two one-judge panels (the panel's vLLM judge for TRACK, and the same model through transformers,
# one request at a time) and two suites over the sample, each with its own state and cache folder.
"$PYTHON" - "$work" "$PANEL" "$TRACK" "$LIMIT" "$BASELINE_CALLS" <<'EOF'
import sys
from pathlib import Path

import yaml

import omnieval.benchmarks  # noqa: F401  (registers the storybench panels)
from omnieval.judges import load_panel

work, panel_name, track, limit, baseline_calls = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
panel = load_panel(panel_name)
judges = [j for t, j in panel.judges() if t == track and j.backend.kind == "vllm"]
if not judges:
    sys.exit(f"gpu_check: panel {panel_name} has no vLLM judge on the {track} track")
judge = judges[0].model_dump(mode="json")
served = {"name": f"gpu-check-vllm-{track}", "tracks": {track: {"judges": [judge]}}}
baseline_judge = {
    **judge,
    "backend": {"kind": "transformers", "model_class": "auto", "dtype": "bfloat16", "device": "cuda",
                "trust_remote_code": bool(judge["backend"].get("trust_remote_code", False))},
    "batch_size": 1,
}
baseline = {"name": f"gpu-check-transformers-{track}", "tracks": {track: {"judges": [baseline_judge]}}}
for name, doc, budget in (("vllm", served, None), ("transformers", baseline, baseline_calls)):
    (work / f"{name}-panel.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    suite = {
        "suite": f"gpu-check-{name}",
        "benchmark": "storybench",
        "dataset": {"name": "storybench-sample", "path": "data/storybench-sample", "limit": limit},
        "systems": {"oracle": {"kind": "oracle"}, "copy-current": {"kind": "copy-current"},
                    "shuffled": {"kind": "shuffled", "seed": 0}},
        "metrics": {},
        "judges": {"panels": [str(work / f"{name}-panel.yaml")],
                   **({"budget": {"max_calls": budget}} if budget else {})},
        "state_dir": str(work / name / "state"),
    }
    (work / f"{name}-suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
print(f"gpu_check: {judge['id']} ({track} track of {panel_name}) vs the same model through transformers")
EOF

status=0
run_phase() {  # name, seconds
    local started=$SECONDS
    if timeout --signal=TERM --kill-after=30 "$2" "$PYTHON" -m omnieval run "$work/$1-suite.yaml" \
        >"$work/$1.log" 2>&1; then
        echo "gpu_check: $1 phase done in $((SECONDS - started)) s (log: $work/$1.log)"
    else
        echo "gpu_check: $1 phase failed or ran past ${2} s; last lines of $work/$1.log:" >&2
        tail -n 20 "$work/$1.log" >&2 || true
        status=5
    fi
}
run_phase vllm "$VLLM_PHASE_S"
run_phase transformers "$BASELINE_PHASE_S"

# Verdicts per second from each run's judge/usage.json: calls over the seconds spent waiting for the
# model (server start-up and model loading are not in them).
"$PYTHON" - "$work" <<'EOF'
import json
import sys
from pathlib import Path

work = Path(sys.argv[1])
rates = {}
for name in ("vllm", "transformers"):
    path = work / name / "state" / "judge" / "usage.json"
    if not path.is_file():
        print(f"{name:13s} no usage.json (the phase did not finish)")
        continue
    total = json.loads(path.read_text())["total"]
    calls, seconds = total.get("calls") or 0, total.get("seconds") or 0.0
    rate = calls / seconds if seconds else 0.0
    rates[name] = rate
    print(f"{name:13s} {calls:4d} verdicts in {seconds:8.1f} s of model time: {rate:.3f} verdicts/s"
          f" (completion tokens: {total.get('completion_tokens')})")
if rates.get("transformers"):
    print(f"speed-up of vLLM over sequential transformers generate: {rates.get('vllm', 0.0) / rates['transformers']:.1f}x")
EOF
exit "$status"
