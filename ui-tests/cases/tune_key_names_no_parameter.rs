// A tuning key that is not a parameter of the kernel.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    template <int BLOCK>
    __global__ void scale(float* y, float a, int n) {}
"#,
    tune = { params = ["BLOCK: 128, 256"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "len" }
);

fn main() {}
