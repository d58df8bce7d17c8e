"""CuPy side of benches/reduction.rs: ReductionKernel (sum of squares, float32) full / axis=1 /
axis=0, cupy.sum through CUB, and device-to-device copy, in GB/s (bytes read / GPU time, median of
20 after warm-up). Run in the same device call as the Rust bench."""
import os
os.environ.setdefault("CUPY_ACCELERATORS", "cub")
import cupy as cp

def median_ms(f, reps=20):
    for _ in range(3):
        f()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        cp.cuda.Stream.null.synchronize(); a.record()
        for _ in range(10): f()
        b.record(); b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) / 10)
    ts.sort()
    return ts[len(ts) // 2]

n = 1 << 28
x = (cp.arange(n, dtype=cp.uint64) * 2654435761 >> 7) % 1000
x = x.astype(cp.float32) * 1e-3
copy = cp.empty_like(x)
copy_ms = median_ms(lambda: copy.data.copy_from_device(x.data, x.nbytes))
copy_gbs = 2 * x.nbytes / copy_ms / 1e6
del copy
print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
print(f"device-to-device copy: {copy_gbs:.0f} GB/s (read + write)")
ssq = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "ssq")
def row(name, ms, b):
    gbs = b / ms / 1e6
    print(f"{name:<34} {ms:>10.4f} {gbs:>10.0f} {gbs / copy_gbs:>12.3f}")
print(f"{'case':<34} {'ms':>10} {'GB/s':>10} {'x copy BW':>12}")
row("cupy ReductionKernel full 2^28", median_ms(lambda: ssq(x)), x.nbytes)
row("cupy.sum (CUB) full 2^28", median_ms(lambda: cp.sum(x)), x.nbytes)
for rows, cols in [(65536, 4096), (4096, 65536), (1 << 20, 32)]:
    m = x[: rows * cols].reshape(rows, cols)
    row(f"cupy RK axis=1 {rows}x{cols}", median_ms(lambda: ssq(m, axis=1)), m.nbytes)
    row(f"cupy RK axis=0 {rows}x{cols}", median_ms(lambda: ssq(m, axis=0)), m.nbytes)
