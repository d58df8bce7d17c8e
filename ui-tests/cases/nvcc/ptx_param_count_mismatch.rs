// The parser reads `#define`s without evaluating `#if`: it takes the last `EXTRA` (empty), so it
// sees one parameter, while nvcc compiles two. The PTX cross-check catches the difference.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    #ifdef __CUDACC__
    #define EXTRA , int n
    #else
    #define EXTRA
    #endif
    extern "C" __global__ void k(float* x EXTRA) { x[threadIdx.x] = 1.0f; }
"#);

fn main() {}
