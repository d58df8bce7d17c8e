// A struct passed by value gets a generated Rust twin when every member is a scalar, vector,
// pointer or array of those; one with a nested struct member (here `Inner`) needs a Rust type of
// the same name next to the macro.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    struct Inner { int a; };
    struct Params { float scale; Inner inner; };
    extern "C" __global__ void scale(float* x, Params p) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < p.inner.a) x[i] *= p.scale;
    }
"#);

fn main() {}
