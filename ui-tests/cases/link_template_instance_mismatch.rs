// An instance of a linked file's template that gives too few template arguments: the error
// points at the instance, as for the module's own templates.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.f; }"#,
    link = ["cases/link_templates.cu"],
    instances = ["scale<float>"],
);

fn main() {}
