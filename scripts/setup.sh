#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks for rlxkv: Debian packages with
# apt-get (when a tool or module is missing), npm packages with `npm ci`
# (when node_modules is missing or stale). Safe to run repeatedly.
#
#   bash scripts/setup.sh build   what `npm start` / `npm run build` need: emscripten,
#                                 cmake, make, a C compiler, python3-onnx, npm packages
#   bash scripts/setup.sh         (or `all`) that and the test tools too: gcc and clang,
#                                 chromium, valgrind, the libFuzzer/sanitizer runtime
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-all}
case "$mode" in
  build | all) ;;
  *) echo "setup.sh: mode must be 'build' or 'all', not '$mode'" >&2; exit 2 ;;
esac

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v make >/dev/null || need+=(make)
command -v emcc >/dev/null || need+=(emscripten)
# onnx.helper for scripts/make_onnx_model.py (the demo's ONNX model), from
# Debian (no PyPI); checked with /usr/bin/python3, as a pyenv python first on
# PATH would not see it.
/usr/bin/python3 -c 'import onnx' 2>/dev/null || need+=(python3-onnx)
if [ "$mode" = all ]; then
  command -v gcc >/dev/null || need+=(gcc)
  command -v clang >/dev/null || need+=(clang)
  command -v chromium >/dev/null || need+=(chromium)
  command -v valgrind >/dev/null || need+=(valgrind)
else
  command -v gcc >/dev/null || command -v clang >/dev/null || need+=(gcc)
fi

updated=""
apt_install() {
  echo "setup: installing $*"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  [ -n "$updated" ] || $SUDO apt-get update -qq
  updated=1
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if [ ${#need[@]} -gt 0 ]; then
  apt_install "${need[@]}"
fi

# libFuzzer and the sanitizer runtimes for the installed clang (checked as
# scripts/fuzz.sh does; libclang-rt-14-dev for Debian 12's clang 14).
if [ "$mode" = all ] && ! ls "$(clang -print-resource-dir)"/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
  apt_install "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  # onnxruntime-node's install scripts (under @huggingface/transformers) would
  # download CUDA binaries from GitHub; the CPU ones ship in the package.
  # 1.30 reads either variable, 1.21 (under transformers-v3) only the second.
  ONNXRUNTIME_NODE_INSTALL=skip ONNXRUNTIME_NODE_INSTALL_CUDA=skip \
    npm ci --no-audit --no-fund --loglevel=error
fi
