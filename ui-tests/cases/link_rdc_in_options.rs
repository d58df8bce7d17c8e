// `-rdc=true` by hand builds relocatable code that cannot be loaded: `rdc = true` device-links it.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.f; }"#,
    options = ["-rdc=true"],
);

fn main() {}
