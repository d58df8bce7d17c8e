"""The loop of `benches/conditional.rs` built with cuda.core's conditional nodes: the Jacobi solver
of `examples/kernels/jacobi.cu` (2-D Poisson, a 32 x 32 grid), one `while` node whose body zeroes
the largest change (a memset captured into the body), sweeps twice and runs the check kernel
that counts the iteration and sets the loop's condition; tolerance 0, so every launch runs
exactly ITERATIONS iterations. Same kernels, same sizes, same timing (wall clock around one graph
launch and its synchronisation, median of ROUNDS) as the Rust bench's "one graph" row, so the
two medians compare directly (the issue asks for cuda-embed at least 1.0x cuda.core).

Run on the GPU machine from the repository root: `python benches/conditional_cuda_core.py`
(`JACOBI_N`, `JACOBI_ITERATIONS`, `JACOBI_ROUNDS` as for the Rust bench).
"""

import ctypes
import math
import os
import pathlib
import statistics
import time

import numpy as np

try:
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
except ImportError:
    from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
try:
    from cuda.bindings import driver
except ImportError:
    from cuda import cuda as driver


def check(result):
    """The value of a cuda.bindings call, raising on an error."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"driver error {err}")
    return rest[0] if len(rest) == 1 else tuple(rest)


# NVRTC's built-in headers do not declare the device runtime's cudaGraphSetConditional (nvcc's
# cuda_runtime.h does): the declaration of cuda_device_runtime_api.h, as cuda-embed's NVRTC
# compiles put it before such a source (cuda_embed_source::devrt).
SET_CONDITIONAL = (
    'extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(unsigned long long, unsigned int);\n'
    "#line 1\n"
)


def compile_kernels(dev):
    source = (pathlib.Path(__file__).resolve().parent.parent / "examples/kernels/jacobi.cu").read_text()
    arch = "sm_" + "".join(str(x) for x in dev.compute_capability)
    code = Program(SET_CONDITIONAL + source, "c++", options=ProgramOptions(arch=arch)).compile("cubin")
    return code.get_kernel("jacobi_sweep"), code.get_kernel("jacobi_check")


def main():
    n = int(os.environ.get("JACOBI_N", 32))
    iterations = int(os.environ.get("JACOBI_ITERATIONS", 1000))
    rounds = int(os.environ.get("JACOBI_ROUNDS", 21))
    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    sweep, check_kernel = compile_kernels(dev)

    w = n + 2
    h = 1.0 / (n + 1)
    h2 = np.float32(h * h)
    xs = np.arange(w) * h
    f_host = (2 * math.pi**2 * np.outer(np.sin(math.pi * xs), np.sin(math.pi * xs))).astype(np.float32)
    nbytes = w * w * 4
    # The stream is a keyword argument (cuda.core's Device.allocate(size, *, stream=None)).
    f, u, v = (dev.allocate(nbytes, stream=stream) for _ in range(3))
    change, count = dev.allocate(4, stream=stream), dev.allocate(4, stream=stream)
    check(driver.cuMemcpyHtoDAsync(int(f.handle), f_host.ctypes.data, nbytes, int(stream.handle)))
    for b, size in ((u, w * w), (v, w * w), (count, 1)):
        check(driver.cuMemsetD32Async(int(b.handle), 0, size, int(stream.handle)))
    stream.sync()

    blocks = (n + 15) // 16
    sweep_cfg = LaunchConfig(grid=(blocks, blocks, 1), block=(16, 16, 1))
    one = LaunchConfig(grid=1, block=32)

    gb = stream.create_graph_builder().begin_building()
    check(driver.cuMemsetD32Async(int(count.handle), 0, 1, int(gb.stream.handle)))
    if hasattr(gb, "create_condition"):
        # cuda.core 1.x: a GraphCondition, whose `handle` is the driver's CUgraphConditionalHandle.
        cond = gb.create_condition(default_value=1)
        handle = int(cond.handle)
    else:
        # cuda.core 0.x: the handle itself.
        cond = gb.create_conditional_handle(default_value=1)
        handle = int(cond)
    body = gb.while_loop(cond)
    body.begin_building()
    check(driver.cuMemsetD32Async(int(change.handle), 0, 1, int(body.stream.handle)))
    launch(body, sweep_cfg, sweep, u, f, v, change, np.int32(n), h2)
    launch(body, sweep_cfg, sweep, v, f, u, change, np.int32(n), h2)
    launch(body, one, check_kernel, change, count, np.float32(0.0), h2, np.int32(iterations),
           ctypes.c_uint64(handle))
    body.end_building()
    graph = gb.end_building().complete()
    graph.upload(stream)

    def solve():
        t0 = time.perf_counter()
        graph.launch(stream)
        stream.sync()
        return time.perf_counter() - t0

    solve()
    got = np.zeros(1, dtype=np.int32)
    check(driver.cuMemcpyDtoH(got.ctypes.data, int(count.handle), 4))
    assert got[0] == iterations, f"the loop ran {got[0]} iterations, not {iterations}"
    times = [solve() for _ in range(rounds)]
    ms = statistics.median(times) * 1e3
    try:
        from importlib.metadata import version

        core = version("cuda-core")
    except Exception:  # noqa: BLE001 (the version is only printed)
        core = "?"
    print(f"GPU: {dev.name}; cuda.core {core}")
    print(f"| Jacobi {n} x {n}, {iterations} iterations, one graph (`while` node) | ms | us per iteration |")
    print("|---|---|---|")
    print(f"| cuda.core GraphBuilder.while_loop | {ms:.3f} | {ms * 1e3 / iterations:.2f} |")


if __name__ == "__main__":
    main()
