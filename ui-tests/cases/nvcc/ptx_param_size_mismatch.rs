// The parser takes the last `#define REAL` (float, 4 bytes) while nvcc compiles the first
// (double, 8 bytes). The PTX cross-check catches the difference.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    #ifdef __CUDACC__
    #define REAL double
    #else
    #define REAL float
    #endif
    extern "C" __global__ void scale(REAL* x, REAL s) { x[threadIdx.x] *= s; }
"#);

fn main() {}
