// A define whose name is not a C identifier.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"extern "C" __global__ void k(float* x) {}"#, defines = ["N=4", "2X=1"]);

fn main() {}
