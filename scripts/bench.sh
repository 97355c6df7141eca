#!/usr/bin/env bash
# npm run bench: every benchmark in one run, then BENCHMARKS.md and
# bench/chart.svg from the figures.
#   1. native C: rlxkv next to the reference algorithm ported to C
#      (bench/baseline.c), in one process (bench/bench_native.c, gcc -O2);
#   2. the wasm build under Node, through the public JS API (bench/bench_node.mjs);
#   3. Chromium + IndexedDB next to raw IndexedDB (bench/bench_browser.mjs);
#   4. time to first token through rlxkv/transformers, cold vs warm, and the
#      adapter's share of a warm start: Node (bench/bench_transformers.mjs)
#      and Chromium (bench/bench_transformers_browser.mjs);
#   5. storage tiers: open time against store size, hit-load against the raw
#      read, memory, event-loop stalls in Node (bench/bench_tiers.mjs) and
#      IndexedDB in Chromium (bench/bench_tiers_browser.mjs); f16 vs f32 and
#      the public insert (bench/bench_insert.mjs); OPFS hit-load in a worker
#      and a window against a raw IndexedDB get and a bare OPFS read
#      (bench/bench_opfs.mjs);
#   6. chat sessions: bytes written per turn, stored and resident against the
#      unique tokens' KV, and flush time as a conversation grows, in Node
#      (bench/bench_chat.mjs, storage 'fs') and Chromium
#      (bench/bench_chat_browser.mjs, 'idb' and 'opfs'); pages: a hit read
#      from 7 pages against readFile / a raw IndexedDB get of the same bytes,
#      and its gather against memcpy (bench/bench_pages.mjs,
#      bench/bench_pages_browser.mjs);
#   7. time to first token on a SmolLM2-135M-shaped model (random weights,
#      scripts/make-model.mjs --shape smollm2-135m) in Chromium: cold, warm
#      from memory, warm after a reload from IndexedDB and from OPFS
#      (bench/bench_ttft.mjs);
#   8. the open of a store of 10,401 pages (2 GB): Node 'fs' in fresh
#      processes, Chromium 'idb' and 'opfs' on fresh page loads
#      (bench/bench_open.mjs; the stores are deleted after);
#   9. models with state (LFM2-, Qwen3.5-, Gemma3-like): what checkpoints
#      cost a cold prefill, a warm start's restore against a bare lookup
#      plus copy (bench/bench_state.mjs; Node), and on WebGPU (SwiftShader)
#      the KV's download after generate and upload on restore
#      (bench/bench_webgpu.mjs);
#  10. download size of the .wasm and the JS a browser loads (bench/size.mjs).
# Raw results go to build/bench/*.json. `npm run bench -- --quick` is a short
# smoke run (fewer repetitions; its figures are not worth publishing).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=""
if [ "${1:-}" = "--quick" ]; then quick="--quick"; fi
out=build/bench
mkdir -p "$out"
rm -f "$out"/native.json "$out"/node.json "$out"/browser.json "$out"/size.json \
  "$out"/transformers-node.json "$out"/transformers-browser.json \
  "$out"/tiers.json "$out"/tiers_browser.json "$out"/insert.json "$out"/opfs.json \
  "$out"/chat.json "$out"/chat_browser.json "$out"/pages.json "$out"/pages_browser.json "$out"/ttft.json "$out"/ttft_demo.json "$out"/open.json "$out"/state.json "$out"/webgpu.json
start=$(date +%s)
load_start=$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || true)

bash scripts/setup.sh

echo "== build: wasm (scripts/build.sh)"
bash scripts/build.sh

echo "== build: native benchmark (${CC:-cc} -O2)"
# Library and baseline get the same flags. All of src/*.c, as CMake builds it.
${CC:-cc} -O2 -std=c11 -Wall -Wextra -Isrc src/*.c bench/baseline.c bench/bench_native.c \
  -o "$out/bench_native"

echo "== native: rlxkv vs the reference algorithm in C"
"$out/bench_native" $quick "$out/native.json"

echo "== wasm under Node (public JS API)"
node --expose-gc bench/bench_node.mjs "$out/node.json" $quick

echo "== Chromium + IndexedDB"
if ! node bench/bench_browser.mjs "$out/browser.json" $quick; then
  echo "bench: the browser benchmark failed; BENCHMARKS.md will say it was not measured" >&2
  rm -f "$out/browser.json"
fi

echo "== transformers.js: time to first token, Node (onnxruntime-node)"
if ! node --expose-gc bench/bench_transformers.mjs "$out/transformers-node.json" $quick; then
  echo "bench: the transformers.js Node benchmark failed; BENCHMARKS.md will say it was not measured" >&2
  rm -f "$out/transformers-node.json"
fi

echo "== transformers.js: time to first token, Chromium (onnxruntime-web wasm)"
if ! node bench/bench_transformers_browser.mjs "$out/transformers-browser.json" $quick; then
  echo "bench: the transformers.js browser benchmark failed; BENCHMARKS.md will say it was not measured" >&2
  rm -f "$out/transformers-browser.json"
fi

for b in "tiers:--expose-gc bench/bench_tiers.mjs" "tiers_browser:bench/bench_tiers_browser.mjs" "insert:--expose-gc bench/bench_insert.mjs" "opfs:bench/bench_opfs.mjs" \
  "chat:bench/bench_chat.mjs" "chat_browser:bench/bench_chat_browser.mjs" \
  "pages:--expose-gc bench/bench_pages.mjs" "pages_browser:bench/bench_pages_browser.mjs"; do
  name=${b%%:*}
  echo "== storage tiers, f16, insert, OPFS, chat sessions, pages: $name"
  # shellcheck disable=SC2086
  if ! node ${b#*:} "$out/$name.json" $quick; then
    echo "bench: $name failed; BENCHMARKS.md will say it was not measured" >&2
    rm -f "$out/$name.json"
  fi
done

echo "== time to first token, SmolLM2-135M shape, Chromium (cold, memory, IndexedDB, OPFS)"
if ! node bench/bench_ttft.mjs "$out/ttft.json" $quick; then
  echo "bench: the TTFT benchmark failed; BENCHMARKS.md will say it was not measured" >&2
  rm -f "$out/ttft.json"
fi
# The demo model's first visits through the remote tier (its cold and memory runs for the ratio).
if ! node bench/bench_ttft.mjs "$out/ttft_demo.json" --model rlxkv-demo --remote-only $quick; then
  echo "bench: the demo model's remote-tier benchmark failed; BENCHMARKS.md will say it was not measured" >&2
  rm -f "$out/ttft_demo.json"
fi

echo "== open of a 10,401-page, 2 GB store: Node, Chromium IndexedDB and OPFS"
if ! node bench/bench_open.mjs "$out/open.json" $quick; then
  echo "bench: the open benchmark failed; BENCHMARKS.md will say it was not measured" >&2
  rm -f "$out/open.json"
fi

echo "== models with state: checkpoints' cost and a warm start's restore (Node)"
if ! node --expose-gc bench/bench_state.mjs "$out/state.json" $quick; then
  echo "bench: the models-with-state benchmark failed; BENCHMARKS.md will say it was not measured" >&2
  rm -f "$out/state.json"
fi

echo "== WebGPU (SwiftShader): the KV's download after generate and upload on restore"
if ! node bench/bench_webgpu.mjs "$out/webgpu.json" $( [ -n "$quick" ] && echo --reps=3 --micro-reps=10 ) > /dev/null; then
  echo "bench: the WebGPU benchmark failed; BENCHMARKS.md will say it was not measured" >&2
  rm -f "$out/webgpu.json"
fi

echo "== size"
node bench/size.mjs "$out/size.json"

echo "== report"
BENCH_SECONDS=$(( $(date +%s) - start )) BENCH_LOAD_START="$load_start" node bench/report.mjs "$out" BENCHMARKS.md bench/chart.svg $quick
