// A struct with bit-fields passed by value gets no generated Rust twin (its members have no Rust
// field types): the error names the struct, says why and what to write, at the kernel source,
// instead of `cannot find type `Flags` in module `super::super``.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    struct Flags { unsigned mode : 4; unsigned taps : 12; float scale; };
    extern "C" __global__ void apply(float* x, Flags f) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < (int)f.taps) x[i] *= f.scale;
    }
"#);

fn main() {}
