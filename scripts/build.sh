#!/usr/bin/env bash
# Builds the WebAssembly module into wasm/dist/ (rlxkv_core.mjs + .wasm), the
# demo's published KV pages and the demo model as ONNX (build/models/): each step only
# if what it makes is missing or older than what it is made from (cmake
# judges the wasm itself), so a second `npm start` starts at once.
set -euo pipefail
cd "$(dirname "$0")/.."

# stale OUT IN...: whether OUT is missing or older than any IN (files or directories, searched).
stale() {
  local out=$1
  shift
  [ -e "$out" ] || return 0
  [ -n "$(find "$@" -newer "$out" -type f -print -quit 2>/dev/null)" ]
}
# emcc -O1 and above runs Node scripts that need acorn from Debian's nodejs dir.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
jobs=$(nproc 2>/dev/null || echo 2)
# MinSizeRel: the browser downloads this; the hot loops are memcpy and a
# tree walk, which -Os keeps fast.
emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=MinSizeRel >/dev/null
cmake --build build/wasm -j"$jobs"
if stale wasm/dist/rlxkv.browser.js js store format wasm/*.js wasm/dist/rlxkv_core_web.mjs wasm/dist/rlxkv_core.wasm; then
  node wasm/bundle.mjs
fi
echo "build: wasm/dist/ (rlxkv_core.mjs + .wasm for Node and unbundled ESM; rlxkv.browser.js + rlxkv_core_web.wasm for browsers)"

# The demo's published pages (demo/assets/kv/, its remote tier): the default
# system prompt's KV, computed in Node by the same model the page runs (needs
# the wasm just built), judged by the index.json the script writes.
if stale demo/assets/kv/index.json demo/model.js demo/system-prompt.js scripts/precompute.mjs format/blob.js store/publish.js store/chain.js wasm/dist/rlxkv_core.wasm; then
  node scripts/precompute.mjs
fi

# The demo model as ONNX model folders for transformers.js (same weights):
# build/models/rlxkv-demo/ (float32 KV) and rlxkv-demo-f16kv/ (float16 KV).
# (Judged by a file the script writes each time: a directory's mtime moves
# only when entries are added or removed, not when its files are rewritten.)
if stale build/models/rlxkv-demo-f16kv/config.json demo/model.js demo/system-prompt.js scripts/make-model.mjs scripts/make_onnx_model.py; then
  node scripts/make-model.mjs
fi

# Tiny hybrid decoders for the cache's tests (random weights, ~1 MB each):
# LFM2-, Qwen3.5-, Gemma3- and Granite-4.0-H-like, float32 and float16 caches
# (build/models/rlxkv-{lfm2,qwen3_5,gemma3,granite4h}[-f16kv]/); granite4h-f16kv is written last.
if stale build/models/rlxkv-granite4h-f16kv/config.json scripts/make-model.mjs scripts/make_onnx_model.py; then
  node scripts/make-model.mjs --hybrid
fi
