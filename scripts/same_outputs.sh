#!/usr/bin/env bash
# Behaviour-unchanged check for refactors: run the three bundled sample suites at BASE_REV and at HEAD
# (each in its own git worktree, the HEAD one starting from a copy of the BASE run's state so judge
# answers come from the cache) and compare leaderboard.json and scores.parquet byte for byte.
# generation.seconds.* are wall-clock timings of examples a generating system re-made (a code change
# changes its kind's code digest, part of every example's key); the report says whether the
# documents are identical with those timings masked. Judge cache hits and model calls are printed.
#
# usage: scripts/same_outputs.sh BASE_REV [WORK_DIR]   (~25-40 min on 2 cores; needs `make setup`)
set -euo pipefail
base_rev=${1:?usage: scripts/same_outputs.sh BASE_REV [WORK_DIR]}
work=${2:-/tmp/omnieval-same-outputs}
repo=$(cd "$(dirname "$0")/.." && pwd)
py="$repo/.venv/bin/python"
suites=(nightly acbench prism)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=true \
  PREFECT_SERVER_ANALYTICS_ENABLED=false GX_ANALYTICS_ENABLED=false DVC_NO_ANALYTICS=1 TOKENIZERS_PARALLELISM=false

rm -rf "$work" && mkdir -p "$work"
git -C "$repo" worktree prune
git -C "$repo" worktree add -f -q "$work/base" "$base_rev"
git -C "$repo" worktree add -f -q "$work/head" HEAD
for tree in base head; do
  cp -r "$repo/data" "$work/$tree/"   # DVC-tracked: not in a worktree
  if [[ -d "$repo/models/evaluators" ]]; then mkdir -p "$work/$tree/models" && cp -r "$repo/models/evaluators" "$work/$tree/models/"; fi
done
[[ -d "$repo/state" ]] && cp -r "$repo/state" "$work/base/"

run_suites() {  # $1 = tree
  for s in "${suites[@]}"; do
    (cd "$work/$1" && PYTHONPATH="$work/$1/src" PREFECT_HOME="$work/$1/.prefect" \
      "$py" -m omnieval run "pipelines/$s.yaml" >"$work/$1-$s.log" 2>&1) || { echo "$1 $s failed: $work/$1-$s.log" >&2; exit 1; }
  done
}
run_suites base
cp -r "$work/base/state" "$work/head/"
run_suites head

"$py" - "$work" "${suites[@]}" <<'PY'
import filecmp, json, sys
from pathlib import Path

work, suites = Path(sys.argv[1]), sys.argv[2:]

def masked(o):
    if isinstance(o, dict):
        return {k: masked(v) for k, v in o.items() if k != "seconds" and not k.startswith("generation.seconds.")}
    return [masked(v) for v in o] if isinstance(o, list) else o

def load(p):
    return json.loads(p.read_text()) if p.is_file() else {}

for s in suites:
    a, b = (work / t / "state" / s for t in ("base", "head"))
    for name in ("leaderboard.json", "scores.parquet"):
        same = filecmp.cmp(a / "report" / name, b / "report" / name, shallow=False)
        line = f"{s}/{name}: {'identical' if same else 'DIFFERS'}"
        if name.endswith(".json") and not same:
            eq = masked(load(a / "report" / name)) == masked(load(b / "report" / name))
            line += f" (identical with generation timings masked: {eq})"
        print(line)
    for part in ("lineage.json", "drift.json"):
        doc = load(b / "judge" / part)
        if "model_calls" in doc or "cache_hits" in doc:
            print(f"{s}/judge/{part}: model_calls {doc.get('model_calls')}, cache_hits {doc.get('cache_hits')}")
PY
