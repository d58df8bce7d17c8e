// With one listed instance, an unlisted one still names the instance that exists and
// where to add the missing one.
use cuda_embed::{cuda_kernel, CudaSlice, CudaStream, LaunchConfig};

cuda_kernel!(
    r#"
    template <typename T>
    __global__ void axpy(T a, const T* x, T* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
"#,
    instances = ["axpy<float>"]
);

fn run(stream: &CudaStream, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) {
    let _ = unsafe { axpy::launch(stream, LaunchConfig::for_num_elems(4), 2.0, x, y, 4) };
}

fn main() {}
