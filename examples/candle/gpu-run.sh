#!/usr/bin/env bash
# Runs the candle example binary (copied beside this script) on a GPU machine that has no Rust:
# puts the folders of the CUDA libraries it links (cuBLAS, cuRAND, NVRTC, cudart; the driver's
# libcuda.so.1 is on the loader path already) on LD_LIBRARY_PATH when the loader does not find
# them by itself (a toolkit's lib64, or the nvidia-* Python wheels), shows `ldd`, and runs it.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$here/cuda-embed-candle-example"
for lib in $(ldd "$bin" | awk '/not found/ {print $1}'); do
  found="$(find /usr/local /usr/lib /opt -name "$lib" 2>/dev/null | head -n 1)"
  if [ -n "$found" ]; then
    LD_LIBRARY_PATH="$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
done
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
ldd "$bin" | grep -E "cuda|cublas|curand|nvrtc|not found"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$bin"
echo "exit status: $?"
