// Reading a `bool` back from the device is refused at compile time: a kernel may have stored any
// byte there, and only 0 and 1 are valid `bool`s. Writing one is fine; read it as `u8` instead.
use cuda_embed::{cuda_kernel, CudaStream};

cuda_kernel!(r#"
    __device__ bool flag;
    extern "C" __global__ void k(int* x) { if (flag) x[0] = 1; }
"#);

fn run(stream: &CudaStream) {
    let _ = flag.set(stream, true);
    let _ = flag.get(stream);
}

fn main() {}
