#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) and runs each for SECONDS.
#
#   bash scripts/fuzz.sh [SECONDS] [HARNESS...]     (npm run fuzz -- 600)
#
# SECONDS defaults to 60 per harness; HARNESS is any of decode, cache, pages
# (default: all three, one after the other). Each runs on a corpus kept in
# build/fuzz/corpus-HARNESS (seeded from tests/fuzz/seeds/HARNESS and, for
# decode, ../shared/vectors),
# with -malloc_limit_mb=64 -rss_limit_mb=2048. A crash, leak, sanitizer
# report, timeout or out-of-memory fails the script; the input is kept in
# build/fuzz/artifacts/ with the command that replays it. Full logs go to
# build/fuzz/log-HARNESS.txt.
#
# RLXKV_FUZZ_CFLAGS adds C flags to the build; RLXKV_FUZZ_ARGS adds libFuzzer
# flags.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

secs=${1:-60}
shift || true
case "$secs" in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$secs'" >&2; exit 2 ;;
esac
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(decode cache pages)
for h in "${harnesses[@]}"; do
  case "$h" in decode | cache | pages) ;; *) echo "fuzz.sh: no harness '$h' (decode, cache, pages)" >&2; exit 2 ;; esac
done

if ! command -v clang >/dev/null; then
  echo "fuzz.sh: clang is missing (bash scripts/setup.sh installs it)" >&2
  exit 1
fi
if ! ls "$(clang -print-resource-dir)"/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
  echo "fuzz.sh: libFuzzer runtime missing (libclang-rt-14-dev; bash scripts/setup.sh)" >&2
  exit 1
fi

build=build/fuzz
jobs=$(nproc 2>/dev/null || echo 2)
echo "== fuzz: building harnesses in $build (clang, ASan + UBSan + libFuzzer)"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DRLXKV_FUZZ=ON -DRLXKV_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="${RLXKV_FUZZ_CFLAGS:-}" >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$build" -j"$jobs" --target "${targets[@]}" >"$build/build.log" 2>&1 || {
  cat "$build/build.log" >&2
  echo "fuzz.sh: build failed" >&2
  exit 1
}

# The seed blobs: ../shared/vectors beside the repository (CI lays shared/
# there too).
vectors="$root/../shared/vectors"
mkdir -p "$build/artifacts"

# Sanitizer settings that keep a run's outcome in its exit code.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

failed=()
summary=()
declare -A pid started

# Runs harness h in the background: its corpus seeded, its log in $build.
start() {
  local h=$1 corpus="$build/corpus-$1" extra=()
  mkdir -p "$corpus"
  if [ "$h" = decode ]; then
    if ls "$vectors"/*.rlxkv >/dev/null 2>&1; then
      for f in "$vectors"/*.rlxkv; do
        [ -e "$corpus/$(basename "$f")" ] || cp "$f" "$corpus/"
      done
    else
      echo "fuzz.sh: warning: no seed blobs in $vectors" >&2
    fi
    extra+=(-dict=tests/fuzz/rlxkv.dict)
  fi
  # Crafted seeds kept with the harnesses (shapes random mutation rarely
  # reaches, such as blobs of more than 128 layers).
  if [ -d "tests/fuzz/seeds/$h" ]; then
    for f in "tests/fuzz/seeds/$h"/*; do
      [ -e "$corpus/seed-$(basename "$f")" ] || cp "$f" "$corpus/seed-$(basename "$f")"
    done
  fi
  echo "== fuzz_$h: ${secs}s on $corpus ($(ls "$corpus" | wc -l) inputs)"
  started[$h]=$SECONDS
  # shellcheck disable=SC2086
  "$build/fuzz_$h" "${extra[@]}" -max_total_time="$secs" -timeout=30 \
    -malloc_limit_mb=64 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$h-" ${RLXKV_FUZZ_ARGS:-} "$corpus" >"$build/log-$h.txt" 2>&1 &
  pid[$h]=$!
}

# Waits for harness h and says how it went.
finish() {
  local h=$1 rc bin="$build/fuzz_$1" corpus="$build/corpus-$1" log="$build/log-$1.txt"
  set +e
  wait "${pid[$h]}"
  rc=$?
  set -e
  local took=$((SECONDS - started[$h]))
  local execs rate line art
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  line="fuzz_$h: ${execs:-?} executions in ${took}s (${rate:-?}/s), corpus $(ls "$corpus" | wc -l) inputs"
  if [ $rc -ne 0 ]; then
    failed+=("$h")
    line="$line: FAILED (exit $rc)"
    echo "$line"
    grep -E 'ERROR|runtime error|fuzz_(decode|cache|pages):|SUMMARY|Test unit written|^    #[0-9]+ ' "$log" | head -40 >&2 || true
    art=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -1)
    [ -n "$art" ] && echo "  replay: $bin $art" >&2
    echo "  full log: $log" >&2
  else
    echo "$line"
  fi
  summary+=("$line")
}

# One after another, or with RLXKV_FUZZ_PARALLEL=1 all at once (npm test's
# smoke run: the same wall time for all three, each on a share of the cores).
if [ "${RLXKV_FUZZ_PARALLEL:-0}" = 1 ]; then
  for h in "${harnesses[@]}"; do start "$h"; done
  for h in "${harnesses[@]}"; do finish "$h"; done
else
  for h in "${harnesses[@]}"; do start "$h"; finish "$h"; done
fi

echo "== fuzz summary"
printf '  %s\n' "${summary[@]}"
echo "fuzz: $((${#harnesses[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
