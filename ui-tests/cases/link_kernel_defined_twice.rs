// A kernel defined both in the module's source and in a linked file: one definition per kernel
// (and one Rust module name). (The linked file's path is relative to trybuild's crate root.)
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void bump(float* y) { y[threadIdx.x] += 2.f; }"#,
    link = ["../../../../ui-tests/cases/link_math.cu"],
);

fn main() {}
