// A template kernel defined both in the module's source and in a linked file: one definition
// per template (its instances are emitted into the file that defines it).
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"template <typename T, int K> __global__ void scale(T* y) { y[threadIdx.x] += (T)K; }"#,
    link = ["cases/link_templates.cu"],
    instances = ["scale<float, 2>"],
);

fn main() {}
