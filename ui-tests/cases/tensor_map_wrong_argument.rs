// A `const __grid_constant__ CUtensorMap` parameter takes `&TensorMap` or `&mut TensorMapMut`:
// a buffer is refused, naming how to make a map.
use cuda_embed::{cuda_kernel, CudaSlice, CudaStream, LaunchConfig};

cuda_kernel!(
    r#"
    #include <cuda.h>
    extern "C" __global__ void load(const __grid_constant__ CUtensorMap map, float* out) {}
"#
);

fn launch(s: &CudaStream, x: &CudaSlice<f32>, out: &mut CudaSlice<f32>) -> cuda_embed::Result<()> {
    unsafe { load::launch(s, LaunchConfig::for_num_elems(1), x, out) }
}

fn main() {}
