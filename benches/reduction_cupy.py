"""CuPy side of benches/reduction.rs: ReductionKernel (sum of squares, float32) full / axis=1 /
axis=0, cupy.sum through CUB, and device-to-device copy, in GB/s (bytes read / GPU time, median of
20 after warm-up). Run in the same device call as the Rust bench, right after it:

    bash .gpu/run bench reduction | tee rust.log
    python3 benches/reduction_cupy.py --rust rust.log

With `--rust FILE` (the Rust bench's output) it ends with the joined table: each case's
reduction_kernel! GB/s next to its CuPy reference and the ratio against the issue's target."""
import os
import re
import sys

os.environ.setdefault("CUPY_ACCELERATORS", "cub")
import cupy as cp

SHAPES = [(65536, 4096), (4096, 65536), (1 << 20, 32)]


def median_ms(f, reps=20):
    for _ in range(3):
        f()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        cp.cuda.Stream.null.synchronize()
        a.record()
        for _ in range(10):
            f()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) / 10)
    ts.sort()
    return ts[len(ts) // 2]


def measure():
    """GB/s of each CuPy case, keyed like the Rust bench's rows, and the copy bandwidth."""
    n = 1 << 28
    x = (cp.arange(n, dtype=cp.uint64) * 2654435761 >> 7) % 1000
    x = x.astype(cp.float32) * 1e-3
    copy = cp.empty_like(x)
    copy_gbs = 2 * x.nbytes / median_ms(lambda: copy.data.copy_from_device(x.data, x.nbytes)) / 1e6
    del copy
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print(f"device-to-device copy: {copy_gbs:.0f} GB/s (read + write)")
    ssq = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "ssq")
    got = {}

    def row(key, label, ms, b):
        gbs = b / ms / 1e6
        got[key] = gbs
        print(f"{label:<34} {ms:>10.4f} {gbs:>10.0f} {gbs / copy_gbs:>12.3f}")

    print(f"{'case':<34} {'ms':>10} {'GB/s':>10} {'x copy BW':>12}")
    row("full RK", "cupy ReductionKernel full 2^28", median_ms(lambda: ssq(x)), x.nbytes)
    row("full CUB", "cupy.sum (CUB) full 2^28", median_ms(lambda: cp.sum(x)), x.nbytes)
    for rows, cols in SHAPES:
        m = x[: rows * cols].reshape(rows, cols)
        row(f"rows {rows}x{cols}", f"cupy RK axis=1 {rows}x{cols}", median_ms(lambda: ssq(m, axis=1)), m.nbytes)
        row(f"cols {rows}x{cols}", f"cupy RK axis=0 {rows}x{cols}", median_ms(lambda: ssq(m, axis=0)), m.nbytes)
    return got, copy_gbs


def join(path, cupy, copy_gbs):
    """The Rust bench's rows (from its output) against the CuPy figures of this process."""
    rust = {}
    small = None
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"^((?:full 2\^28)|(?:rows|cols) \d+x\d+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)", line)
        if m:
            rust[m.group(1)] = float(m.group(3))
        if line.startswith("small 1000 elements"):
            small = line.strip()
    print()
    print(f"joined (reduction_kernel! from {os.path.basename(path)}, CuPy above; CuPy copy {copy_gbs:.0f} GB/s)")
    print(f"{'case':<18} {'ours GB/s':>10} {'x copy':>7} {'reference':>22} {'ref GB/s':>9} {'ratio':>7} {'target':>7}")
    cases = [("full 2^28", "full CUB", "cupy.sum (CUB)", 0.98), ("full 2^28", "full RK", "ReductionKernel", 1.15)]
    for rows, cols in SHAPES:
        cases.append((f"rows {rows}x{cols}", f"rows {rows}x{cols}", "RK axis=1", 1.05))
    for rows, cols in SHAPES:
        cases.append((f"cols {rows}x{cols}", f"cols {rows}x{cols}", "RK axis=0", 1.0))
    for ours, ref, label, target in cases:
        if ours not in rust:
            print(f"{ours:<18} (missing from the Rust output)")
            continue
        ratio = rust[ours] / cupy[ref]
        mark = "met" if ratio >= target else "MISSED"
        print(f"{ours:<18} {rust[ours]:>10.0f} {rust[ours] / copy_gbs:>7.3f} {label:>22} {cupy[ref]:>9.0f} "
              f"{ratio:>7.3f} {target:>5.2f} {mark}")
    if small:
        print(small)


def main():
    cupy, copy_gbs = measure()
    if "--rust" in sys.argv:
        join(sys.argv[sys.argv.index("--rust") + 1], cupy, copy_gbs)


if __name__ == "__main__":
    main()
