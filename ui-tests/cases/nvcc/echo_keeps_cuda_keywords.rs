// nvcc quotes the preprocessed line under an error (`__attribute__((global))`); the log shows the
// line as written here (`__global__`, `__launch_bounds__(256)`), the caret under the same token.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void __launch_bounds__(256) k(float* x, undefined_t n) { x[0] = 1.0f; }
"#);

fn main() {}
