// `a::k` and `b::k` both generate modules, so each is named by its namespace path (`a_k`, `b_k`),
// and `a_k` is also the kernel `a_k`'s module: the error says so and names the fix (`rename`).
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    namespace a { __global__ void k(float* x) { x[threadIdx.x] = 1.0f; } }
    namespace b { __global__ void k(float* x) { x[threadIdx.x] = 2.0f; } }
    __global__ void a_k(float* x) { x[threadIdx.x] = 3.0f; }
"#);

fn main() {}
