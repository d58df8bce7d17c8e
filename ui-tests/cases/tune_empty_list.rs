// A tune parameter with no values.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    template <int BLOCK>
    __global__ void scale(float* y, float a, int n) {}
"#,
    tune = { params = ["BLOCK:"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n" }
);

fn main() {}
