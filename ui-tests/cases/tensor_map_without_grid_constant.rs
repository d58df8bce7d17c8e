// A `CUtensorMap` parameter must be `const __grid_constant__`: the TMA reads the descriptor in
// parameter memory, and a plain by-value parameter is copied to local memory.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    #include <cuda.h>
    extern "C" __global__ void load(CUtensorMap map, float* out) {}
"#
);

fn main() {}
