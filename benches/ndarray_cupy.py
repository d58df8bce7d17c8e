"""CuPy side of benches/ndarray.rs: ElementwiseKernel on a transposed x.T + y (16384^2 f32) and a
bias add ([4096, 16384] + [16384]), ReductionKernel over axes (0,2) and (1,3) of 64x128x64x128 and
over the last axis of a transposed 8192^2 view, in GB/s (bytes read + written / GPU time, median
of 11 after warm-up), the same byte counts as the Rust bench. Run in the same device call, after
it:

    ./ndarray-bench | tee rust.log
    python3 benches/ndarray_cupy.py --rust rust.log

With `--rust FILE` it ends with the joined table: cuda-embed GB/s, CuPy GB/s and the ratio."""
import re
import sys

import cupy as cp


def median_ms(f, reps=11):
    for _ in range(2):
        f()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        for _ in range(10):
            f()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) / 10)
    ts.sort()
    return ts[len(ts) // 2]


def measure():
    n = 1 << 28
    x = (cp.arange(n, dtype=cp.uint64) * 2654435761 >> 7) % 1000
    x = x.astype(cp.float32) * 1e-3
    y = x.copy()
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    add = cp.ElementwiseKernel("T x, T y", "T z", "z = x + y", "nd_add")
    rsum = cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "nd_sum")
    got = {}

    def row(key, label, nbytes, ms):
        gbs = nbytes / ms / 1e6
        got[key] = gbs
        print(f"{label:<48} {ms:>9.4f} ms {gbs:>8.0f} GB/s")

    m = 16384
    xt, ym = x.reshape(m, m).T, y.reshape(m, m)
    z = cp.empty((m, m), cp.float32)
    row("transpose", "cupy EK x.T + y 16384x16384", 12 * n, median_ms(lambda: add(xt, ym, z)))
    r, c = 4096, 16384
    xb, bias = x[: r * c].reshape(r, c), y[:c]
    zb = cp.empty((r, c), cp.float32)
    row("bias", "cupy EK [4096,16384] + [16384]", 4 * (2 * r * c + c), median_ms(lambda: add(xb, bias, zb)))
    x4 = x[: 1 << 26].reshape(64, 128, 64, 128)
    row("red02", "cupy RK axes (0,2) of 64x128x64x128", 4 * ((1 << 26) + 16384), median_ms(lambda: rsum(x4, axis=(0, 2))))
    row("red13", "cupy RK axes (1,3) of 64x128x64x128", 4 * ((1 << 26) + 4096), median_ms(lambda: rsum(x4, axis=(1, 3))))
    q = 8192
    xq = x[: q * q].reshape(q, q).T
    row("redT", "cupy RK last axis of transposed 8192x8192", 4 * (q * q + q), median_ms(lambda: rsum(xq, axis=1)))
    fused = fuse_case(x, y)
    got.update(fused)
    return got


def fuse_case(x, y):
    """d = x - y; e = d * d * w; sum(e) on 2^28 f32: cupy.fuse and the unfused CuPy sequence."""
    w = y * 0.5

    @cp.fuse()
    def f(x, y, w):
        d = x - y
        return cp.sum(d * d * w)

    out = {}
    ms = median_ms(lambda: f(x, y, w))
    gbs = 12 * x.size / ms / 1e6
    print(f"{'cupy.fuse d=x-y; e=d*d*w; sum(e) 2^28':<48} {ms:>9.4f} ms {gbs:>8.0f} GB/s")
    out["fuse"] = gbs
    ms = median_ms(lambda: cp.sum((x - y) * (x - y) * w))
    gbs = 12 * x.size / ms / 1e6
    print(f"{'cupy unfused (x-y)*(x-y)*w then sum 2^28':<48} {ms:>9.4f} ms {gbs:>8.0f} GB/s")
    out["unfused_cupy"] = gbs
    # What a CuPy user fuses by hand: one ReductionKernel whose map is the whole chain (the kernel
    # cupy.fuse is meant to produce), so the fuse! figure is also judged against a fair fused
    # CuPy reduction, not only against cupy.fuse's own code generation.
    rk = cp.ReductionKernel("T x, T y, T w", "T s", "(x - y) * (x - y) * w", "a + b", "s = a", "0", "wsd_rk")
    ms = median_ms(lambda: rk(x, y, w))
    gbs = 12 * x.size / ms / 1e6
    print(f"{'cupy RK map=(x-y)*(x-y)*w, a+b 2^28 (by hand)':<48} {ms:>9.4f} ms {gbs:>8.0f} GB/s")
    out["fuse_rk"] = gbs
    return out


def main():
    got = measure()
    if "--rust" in sys.argv:
        path = sys.argv[sys.argv.index("--rust") + 1]
        ours = {}
        for line in open(path):
            m = re.match(r"ROW (\S+) ([0-9.]+)", line)
            if m:
                ours[m.group(1)] = float(m.group(2))
        print(f"\n{'case':<12} {'ours GB/s':>10} {'CuPy GB/s':>10} {'ratio':>8}")
        for key, ref in got.items():
            if key in ours:
                print(f"{key:<12} {ours[key]:>10.0f} {ref:>10.0f} {ours[key] / ref:>8.3f}")


if __name__ == "__main__":
    main()
