// Same-shape overloads (one float*, one double* version) are not detected as overloads: the
// parser compares only word and `*` counts, so it takes the second for the definition of the first.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    __global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }
    __global__ void scale(double* x, double s) { x[threadIdx.x] *= s; }
"#);

fn main() {}
