// Overloads with the same shape (a float and a double version) are overloads too, not a
// declaration followed by its definition.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    __global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }
    __global__ void scale(double* x, double s) { x[threadIdx.x] *= s; }
"#);

fn main() {}
