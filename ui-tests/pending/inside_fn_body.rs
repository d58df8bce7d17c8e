// `cuda_kernel!` belongs at module level: the generated kernel modules reach their shared module
// through `super::`, which does not see items inside a function body.
use cuda_embed::cuda_kernel;

fn main() {
    cuda_kernel!(r#"
        extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }
    "#);
}
