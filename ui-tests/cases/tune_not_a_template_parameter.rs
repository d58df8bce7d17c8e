// A tune parameter the template does not have.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    template <int BLOCK>
    __global__ void scale(float* y, float a, int n) {}
"#,
    tune = { params = ["BLOCK: 128, 256", "TILE: 16, 32"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n" }
);

fn main() {}
