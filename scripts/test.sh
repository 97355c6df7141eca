#!/usr/bin/env bash
# Every suite: native C (ctest), the same under valgrind's memcheck and
# under ASan+UBSan, the wasm build, the Node suite, the browser suite
# (Chromium) and a short fuzz run (the three harnesses side by side for 30 s; `npm run fuzz -- 600` for a long one).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)

echo "== C: native build and ctest ($(date +%T))"
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/native -j"$jobs"
ctest --test-dir build/native --output-on-failure -j"$jobs"

echo "== C: valgrind memcheck (uninitialised reads, which ASan does not see; leaks) ($(date +%T))"
# The three at once (each single-threaded under valgrind); each one's status checked.
pids=()
for t in cache codec pages; do
  valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite "build/native/test_$t" >/dev/null &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

echo "== C: ASan + UBSan ($(date +%T))"
CC=clang cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DRLXKV_SANITIZE=ON >/dev/null
cmake --build build/asan -j"$jobs"
ctest --test-dir build/asan --output-on-failure -j"$jobs"

echo "== wasm build ($(date +%T))"
bash scripts/build.sh

echo "== Node suite ($(date +%T))"
# Two test files at once (each its own process, its own temp dirs and
# fake-indexeddb): they wait on I/O and child processes as much as on CPU.
node --test --test-reporter=spec --test-concurrency=2 tests/node/

echo "== browser suite (Chromium) ($(date +%T))"
node --test --test-reporter=spec --test-concurrency=1 tests/browser/

echo "== short fuzz runs (libFuzzer) ($(date +%T))"
# The three harnesses at once: 30 s of wall time for the smoke run.
RLXKV_FUZZ_PARALLEL=1 bash scripts/fuzz.sh "${RLXKV_FUZZ_SECONDS:-30}"
echo "== done ($(date +%T))"
