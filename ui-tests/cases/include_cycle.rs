// Two headers next to this file include each other without include guards.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    #include "cycle_a.cuh"
    extern "C" __global__ void k(float* x) {}
"#);

fn main() {}
