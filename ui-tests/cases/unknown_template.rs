// An instance of a template the source does not define.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    template <typename T>
    __global__ void axpy(T a, const T* x, T* y, int n) {}
"#,
    instances = ["axpy<float>", "axpi<float>"]
);

fn main() {}
