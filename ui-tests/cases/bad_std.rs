// An unknown C++ standard.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"extern "C" __global__ void k(float* x) {}"#, std = "c++98");

fn main() {}
