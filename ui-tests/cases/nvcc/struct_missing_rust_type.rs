// A struct passed by value needs a Rust type of the same name next to the macro.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    struct Params { float scale; int n; };
    extern "C" __global__ void scale(float* x, Params p) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < p.n) x[i] *= p.scale;
    }
"#);

fn main() {}
