// A source with only device helpers has nothing to launch.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    __device__ float twice(float x) { return 2.0f * x; }
"#);

fn main() {}
