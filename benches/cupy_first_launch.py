"""CuPy side of the first-launch table: RawKernel first launch (compile or cache load + module
load + launch + sync) after the CUDA context exists, in fresh processes, cold and with a warm
CuPy kernel cache. Run on the GPU machine: python3 benches/cupy_first_launch.py"""
import os, subprocess, sys, tempfile, statistics

CHILD = r'''
import time, cupy as cp
y = cp.zeros(256, dtype=cp.float32); cp.cuda.runtime.deviceSynchronize()
src = r"""extern "C" __global__ void first(float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * y[i] + 1.0f; }"""
t0 = time.perf_counter()
k = cp.RawKernel(src, "first")
k((1,), (256,), (y, cp.float32(2.0), cp.int32(256)))
cp.cuda.runtime.deviceSynchronize()
print("MS=%f" % ((time.perf_counter() - t0) * 1e3))
'''

def run(cache):
    env = dict(os.environ, CUPY_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True).stdout
    return float(out.split("MS=")[1])

cold = [run(tempfile.mkdtemp()) for _ in range(5)]
warm_dir = tempfile.mkdtemp(); run(warm_dir)
warm = [run(warm_dir) for _ in range(9)]
import cupy
print("CuPy", cupy.__version__)
print("| CuPy RawKernel first launch | median ms | min ms | runs |")
print("|---|---|---|---|")
print("| cold cache (NVRTC compile) | %.3f | %.3f | %d |" % (statistics.median(cold), min(cold), len(cold)))
print("| warm CuPy disk cache | %.3f | %.3f | %d |" % (statistics.median(warm), min(warm), len(warm)))
