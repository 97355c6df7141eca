#!/usr/bin/env bash
# Builds the WebAssembly module into web/dist/ (rlxkv_core.mjs + .wasm), the
# demo's KV asset and the demo model as ONNX (build/models/).
set -euo pipefail
cd "$(dirname "$0")/.."
# emcc -O1 and above runs Node scripts that need acorn from Debian's nodejs dir.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
jobs=$(nproc 2>/dev/null || echo 2)
# MinSizeRel: the browser downloads this; the hot loops are memcpy and a
# tree walk, which -Os keeps fast.
emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=MinSizeRel >/dev/null
cmake --build build/wasm -j"$jobs"
node web/bundle.mjs
echo "build: web/dist/ (rlxkv_core.mjs + .wasm for Node and unbundled ESM; rlxkv.browser.js for browsers, loading the same rlxkv_core.wasm)"

# The demo's shipped asset: the default system prompt's KV, computed in Node
# by the same model the page runs (needs the wasm just built).
node scripts/precompute.mjs

# The demo model as ONNX model folders for transformers.js (same weights):
# build/models/rlxkv-demo/ (float32 KV) and rlxkv-demo-f16kv/ (float16 KV).
node scripts/make-model.mjs
