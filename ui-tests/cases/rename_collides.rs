// `rename` gives `a::kernel` the name `kernel`, which `b::kernel` (the only other kernel of that
// name) keeps: the error is at the new name.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    namespace a { template <class T> __global__ void kernel(T* p) { p[0] = T(1); } }
    namespace b { template <class T> __global__ void kernel(T* p) { p[0] = T(2); } }
"#,
    instances = ["a::kernel<float>", "b::kernel<int>"],
    rename = { "a::kernel" => kernel }
);

fn main() {}
