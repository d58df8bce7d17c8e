// `rename` gives a kernel a Rust identifier, not a string or a path.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    namespace a { __global__ void k(float* x) { x[0] = 1.0f; } }
"#,
    rename = { "a::k" => "a-k" }
);

cuda_kernel!(
    r#"
    namespace b { __global__ void k(float* x) { x[0] = 1.0f; } }
"#,
    rename = { "b::k" => super }
);

fn main() {}
