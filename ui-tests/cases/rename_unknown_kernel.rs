// `rename` names a kernel the source does not have: the error is at the name, and lists the
// kernels there are.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    namespace a { __global__ void k(float* x) { x[0] = 1.0f; } }
"#,
    rename = { "b::k" => other }
);

fn main() {}
