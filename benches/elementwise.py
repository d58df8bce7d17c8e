"""CuPy ElementwiseKernel saxpy (2^28 float32, 12 bytes per element) and a device-to-device copy,
timed with CUDA events (median of 15 repetitions of 20 launches), for benches/elementwise.rs's
comparison in the same device call. Prints GB/s."""
import cupy as cp

n = 1 << 28
saxpy = cp.ElementwiseKernel("float32 x, float32 a", "float32 y", "y = a * x + y", "cupy_saxpy")
x = cp.random.random(n, dtype=cp.float32) - 0.5
y = cp.random.random(n, dtype=cp.float32) - 0.5
a = cp.float32(2.0)


def timed(f):
    for _ in range(3):
        f()
    v = []
    for _ in range(15):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(20):
            f()
        e.record()
        e.synchronize()
        v.append(cp.cuda.get_elapsed_time(s, e) / 20)
    v.sort()
    return v[len(v) // 2]


ms = timed(lambda: saxpy(x, a, y))
dst = cp.empty_like(x)
cms = timed(lambda: cp.copyto(dst, x))
ok = cp.allclose(y, y)  # keep y alive
print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
print(f"cupy ElementwiseKernel saxpy: {ms:.4f} ms, {12 * n / ms / 1e6:.0f} GB/s")
print(f"cupy copy (read + write): {cms:.4f} ms, {8 * n / cms / 1e6:.0f} GB/s")
print(f"CUPY_F32_GBS {12 * n / ms / 1e6:.1f}")
