#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks for building and testing rlxkv:
# Debian packages with apt-get (when a tool or module is missing), npm
# packages with `npm ci` (when node_modules is missing or stale). Safe to run
# repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v gcc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v clang >/dev/null || need+=(clang)
command -v emcc >/dev/null || need+=(emscripten)
command -v chromium >/dev/null || need+=(chromium)
command -v valgrind >/dev/null || need+=(valgrind)
# onnx.helper for scripts/make_onnx_model.py, from Debian (no PyPI); checked
# with /usr/bin/python3, as a pyenv python first on PATH would not see it.
/usr/bin/python3 -c 'import onnx' 2>/dev/null || need+=(python3-onnx)

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
if ! ls "$(clang -print-resource-dir)"/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
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
