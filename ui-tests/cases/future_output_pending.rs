// An awaited launch keeps its buffers borrowed until its future is dropped: the types say what is
// in flight. Reading an output while its future is pending, or giving that output to another
// launch, is a compile error; so is an output over an input or another output of one async launch.
use cuda_embed::{cuda_kernel, elementwise_kernel, reduction_kernel, CudaSlice, CudaStream, LaunchConfig};

cuda_kernel!(r#"
    extern "C" __global__ void scale(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = 2.0f * x[i];
    }
    extern "C" __global__ void split(const float* x, float* y, float* z, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { y[i] = x[i]; z[i] = x[i]; }
    }
"#);

reduction_kernel!(total, inputs = "float x", outputs = "float y", map = "x", reduce = "a + b", identity = "0");

elementwise_kernel!(twice, inputs = "float x", outputs = "float y", operation = "y = 2 * x");

async fn read_while_pending(s: &std::sync::Arc<CudaStream>, c: LaunchConfig, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>) {
    let pending = unsafe { scale::launch_async(s, c, x, y, 1) };
    let _ = s.clone_dtoh(y);
    let _ = pending.await;
}

async fn write_while_pending(s: &CudaStream, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>) {
    let pending = twice::launch_async(s, x, y);
    let _ = twice::launch(s, x, y);
    let _ = pending.await;
}

async fn output_over_input(s: &CudaStream, y: &mut CudaSlice<f32>) {
    let _ = twice::launch_async(s, &*y, y).await;
}

async fn output_over_output(s: &CudaStream, c: LaunchConfig, x: &CudaSlice<f32>, b: &mut CudaSlice<f32>) {
    let _ = unsafe { split::launch_async(s, c, x, b, b, 1) }.await;
}

async fn typed_value_output_over_input(s: &CudaStream, c: LaunchConfig, b: &mut CudaSlice<f32>, z: &mut CudaSlice<f32>) {
    let _ = unsafe { split::KERNEL.launch_async(s, c, (&*b, b, z, 1i32)) }.await;
}

async fn graph_launch_while_updating(s: &CudaStream, exec: &mut cuda_embed::GraphExec<'_>) {
    let pending = unsafe { exec.launch_async(s) };
    let _ = exec.update(&cuda_embed::Graph::new(s.context()).unwrap());
    let _ = pending.await;
}

async fn reduction_output_over_input(s: &std::sync::Arc<CudaStream>, b: &mut CudaSlice<f32>) {
    let _ = total::launch_async(s, &*b, b).await;
}

async fn nd_output_over_input(s: &CudaStream, v: &mut cuda_embed::NdViewMut<'_, f32>) {
    let _ = twice::launch_nd_async(s, &*v, v).await;
}

async fn axes_output_pending(s: &std::sync::Arc<CudaStream>, x: &cuda_embed::NdView<'_, f32>, v: &mut cuda_embed::NdViewMut<'_, f32>) {
    let pending = total::launch_axes_async(s, x, &[0], v);
    let _ = v.shape();
    let _ = pending.await;
}

async fn run_time_twins(
    s: &std::sync::Arc<CudaStream>,
    k: &cuda_embed::ElementwiseKernel,
    r: &cuda_embed::Reduction,
    p: &cuda_embed::ProgramKernel,
    b: &mut CudaSlice<f32>,
) {
    use cuda_embed::{Arg, TypedArg};
    let _ = k.launch_async(s, &mut [Arg::slice(&*b), Arg::slice_mut(b)]).await;
    let _ = r.launch_async(s, &mut [TypedArg::slice(&*b), TypedArg::slice_mut(b)]).await;
    let _ = unsafe { p.launch_async(s, LaunchConfig::for_num_elems(1), &mut [Arg::slice(&*b), Arg::slice_mut(b)]) }.await;
}

fn main() {}
