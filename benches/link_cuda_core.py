"""cuda.core's run-time Linker on the same link as `benches/link.rs` section 3: two PTX objects
(`main` calling `sq` of `math`), compiled by cuda.core's Program with relocatable device code,
linked to a cubin and loaded (the first `get_kernel` loads the module). cuda.core has no disk cache
of linked code, so its figure compares with cuda-embed's cold-cache link.

Run on the GPU machine: `python benches/link_cuda_core.py`.
"""

import statistics
import time

try:
    from cuda.core import Device, Linker, LinkerOptions, Program, ProgramOptions
except ImportError:
    from cuda.core.experimental import Device, Linker, LinkerOptions, Program, ProgramOptions

MAIN = r"""
    __device__ float sq(float x);
    extern "C" __global__ void squares(float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = sq(y[i]);
    }
"""
MATH = "__device__ float sq(float x) { return x * x; }\n"


def main():
    dev = Device()
    dev.set_current()
    arch = "sm_" + "".join(str(x) for x in dev.compute_capability)
    opts = ProgramOptions(arch=arch, relocatable_device_code=True)
    main_ptx = Program(MAIN, "c++", options=opts).compile("ptx")
    math_ptx = Program(MATH, "c++", options=opts).compile("ptx")
    backend = None
    link_only, link_load = [], []
    for _ in range(3 + 9):
        t0 = time.perf_counter()
        linker = Linker(main_ptx, math_ptx, options=LinkerOptions(arch=arch))
        cubin = linker.link("cubin")
        t1 = time.perf_counter()
        cubin.get_kernel("squares")
        t2 = time.perf_counter()
        backend = getattr(linker, "backend", backend)
        link_only.append((t1 - t0) * 1e3)
        link_load.append((t2 - t0) * 1e3)
        linker.close() if hasattr(linker, "close") else None
    link_only, link_load = link_only[3:], link_load[3:]
    print(f"GPU: {dev.name}")
    print(f"| cuda.core Linker ({backend}), 2 PTX objects | median ms |")
    print("|---|---|")
    print(f"| link to cubin | {statistics.median(link_only):.3f} |")
    print(f"| link + load (first get_kernel) | {statistics.median(link_load):.3f} |")


if __name__ == "__main__":
    main()
