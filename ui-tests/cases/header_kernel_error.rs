// A kernel defined in an included header gets a launcher like one in the source, so a parameter
// that cannot become Rust is an error citing the header's file and line.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    #include "header_kernel_error.cuh"
    extern "C" __global__ void ok(float* x) { x[threadIdx.x] = 1.0f; }
"#);

fn main() {}
