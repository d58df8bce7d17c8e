// An explicit instantiation whose template arguments are deduced from its parameter list, where
// one cannot be (`N` is a non-type parameter): the error says to write them out.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    template <class T, int N> __global__ void fill(T* p) { p[threadIdx.x] = T(N); }
    template __global__ void fill(float*);
"#
);

fn main() {}
