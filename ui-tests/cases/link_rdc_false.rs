// `link` needs relocatable device code: `rdc = false` contradicts it.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.f; }"#,
    rdc = false,
    link = ["kernels/math.cu"],
);

fn main() {}
