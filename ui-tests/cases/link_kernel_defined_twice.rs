// A kernel defined both in the module's source and in a linked file: one definition per kernel
// (and one Rust module name). (`cases/link_math.cu` is relative to the crate root, where
// tests/ui.rs puts a copy: trybuild builds the cases as a crate of its own.)
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void bump(float* y) { y[threadIdx.x] += 2.f; }"#,
    link = ["cases/link_math.cu"],
);

fn main() {}
