// An `#include "..."` that does not exist next to this file.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    #include "no_such_header.cuh"
    extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }
"#);

fn main() {}
