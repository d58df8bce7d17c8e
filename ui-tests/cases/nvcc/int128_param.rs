// `__int128` has no Rust counterpart in the type table: the macro names the parameter and type.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void wide(unsigned long long* out, __int128 v) {
        out[0] = (unsigned long long)v;
    }
"#);

fn main() {}
