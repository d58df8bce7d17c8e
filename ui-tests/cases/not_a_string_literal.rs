// The source must be a literal: constants and macros cannot be read at expansion time.
use cuda_embed::cuda_kernel;

const SOURCE: &str = r#"extern "C" __global__ void k(float* x) { x[0] = 1.0f; }"#;

cuda_kernel!(SOURCE);

fn main() {}
