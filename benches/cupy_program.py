"""CuPy side of the `Program` table (benches/program.rs): RawModule with the same source, define
and name expressions; first use (compile or cache load + module load + get_function + launch +
sync) after the CUDA context exists, in fresh processes, with an empty CUPY_CACHE_DIR (cold) and a
warm one (disk-cache hit). Run on the GPU machine: python3 benches/cupy_program.py"""
import os, subprocess, sys, tempfile, statistics

CHILD = r'''
import time, cupy as cp
x = cp.ones(256, dtype=cp.float32); y = cp.zeros(256, dtype=cp.float32)
cp.cuda.runtime.deviceSynchronize()
src = r"""
template <class T> __global__ void axpy(T a, const T* x, T* y, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
t0 = time.perf_counter()
mod = cp.RawModule(code=src, options=("-DBLOCK=256",), name_expressions=("axpy<float>", "axpy<double>"))
k = mod.get_function("axpy<float>")
k((1,), (256,), (cp.float32(2.0), x, y, cp.int32(256)))
cp.cuda.runtime.deviceSynchronize()
print("MS=%f" % ((time.perf_counter() - t0) * 1e3))
'''


def run(cache):
    env = dict(os.environ, CUPY_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True).stdout
    return float(out.split("MS=")[1])


cold = [run(tempfile.mkdtemp()) for _ in range(5)]
warm_dir = tempfile.mkdtemp()
run(warm_dir)
warm = [run(warm_dir) for _ in range(9)]
import cupy
print("CuPy", cupy.__version__, "on", cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
print("| CuPy RawModule first use, fresh process | median ms | min ms | runs |")
print("|---|---|---|---|")
print("| cold cache (NVRTC compile) | %.3f | %.3f | %d |" % (statistics.median(cold), min(cold), len(cold)))
print("| warm CuPy disk cache | %.3f | %.3f | %d |" % (statistics.median(warm), min(warm), len(warm)))
