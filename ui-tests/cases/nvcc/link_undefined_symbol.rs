// A `__device__` function declared and called here but defined in no linked file: a compile
// error naming the symbol and the files, not a load failure at run time. (`cases/link_math.cu`
// is relative to the crate root, where tests/ui.rs puts a copy: trybuild's crate lives in
// <target dir>/tests/trybuild/<name>/.)
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    __device__ float cube(float x);
    extern "C" __global__ void k(float* y) { y[threadIdx.x] = cube(y[threadIdx.x]); }
"#,
    link = ["cases/link_math.cu"],
);

fn main() {}
