// Same-named templates in two namespaces are no error until both are instantiated: then
// `a::kernel<float>` and `b::kernel<int>` would both be launched through `kernel::launch`.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    namespace a { template <class T> __global__ void kernel(T* p) { p[0] = T(1); } }
    namespace b { template <class T> __global__ void kernel(T* p) { p[0] = T(2); } }
"#,
    instances = ["a::kernel<float>", "b::kernel<int>"]
);

fn main() {}
