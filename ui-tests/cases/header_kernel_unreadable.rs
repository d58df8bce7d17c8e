// A user header that defines a kernel the reader cannot read: every kernel the compiler sees
// gets a launcher, so this is an error at the header's line rather than a missing launcher.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    #include "header_kernel_unreadable.cuh"
    extern "C" __global__ void ok(float* x) { x[threadIdx.x] = 1.0f; }
"#);

fn main() {}
