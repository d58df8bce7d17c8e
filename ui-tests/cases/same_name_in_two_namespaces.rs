// `a::k` and `b::k` would both generate `pub mod k`.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    namespace a { __global__ void k(float* x) { x[threadIdx.x] = 1.0f; } }
    namespace b { __global__ void k(float* x) { x[threadIdx.x] = 2.0f; } }
"#);

fn main() {}
