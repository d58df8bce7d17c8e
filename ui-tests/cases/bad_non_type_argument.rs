// A type where the template takes a value.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    template <typename T, int BLOCK>
    __global__ void block_sum(const T* x, T* out) {}
"#,
    instances = ["block_sum<float, double>"]
);

fn main() {}
