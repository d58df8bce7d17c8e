// A kernel cannot take a host reference: `float& r` is rejected with the parameter named.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void bump(float* x, float& r) {
        x[threadIdx.x] += r;
    }
"#);

fn main() {}
