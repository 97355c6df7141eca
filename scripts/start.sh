#!/usr/bin/env bash
# npm start: install what is missing, build (the wasm, the browser bundle and
# the demo's shipped KV asset), and serve the demo on
# http://127.0.0.1:${PORT:-8080}/demo/. MODEL_DIR=/path/to/model-folder also
# serves that folder at /model-dir/ for the demo's transformers.js engine
# (MODEL_DTYPE=q4 etc. picks its onnx/model_*.onnx); the address is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build   # not the test tools (chromium, clang, valgrind, libFuzzer)
bash scripts/build.sh
exec node scripts/serve.mjs "${PORT:-8080}"
