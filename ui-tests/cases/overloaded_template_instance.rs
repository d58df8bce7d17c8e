// An instance of an overloaded template kernel names no one launcher signature. The overloads
// themselves, when nothing instantiates them, are no error (a library's headers hold many).
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    namespace lib {
    template <class T> __global__ void init(T* p, int n) { if (n > 0) p[0] = T(); }
    template <class T> __global__ void init(T* p) { p[0] = T(); }
    }
    extern "C" __global__ void mine(float* x) { x[0] = 1.f; }
"#,
    instances = ["lib::init<float>"]
);

fn main() {}
