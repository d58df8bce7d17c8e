// Conformance matrix, "an output aliasing an input / another output" for every launch family:
// a launch borrows its inputs shared and its outputs exclusively, so the borrow checker refuses
// the same buffer as an output and as another operand, whatever the family.
use cuda_embed::{cuda_kernel, elementwise_kernel, reduction_kernel, Arg, CudaSlice, CudaStream, LaunchConfig, NdView, NdViewMut};
use cuda_embed::{ElementwiseKernel, ProgramKernel, Reduction, TypedArg};

cuda_kernel!(r#"
    extern "C" __global__ void split(const float* x, float* y, float* z, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { y[i] = x[i]; z[i] = x[i]; }
    }
"#);

elementwise_kernel!(ew, inputs = "float x", outputs = "float y, float z", operation = "y = x; z = x");

reduction_kernel!(red, inputs = "float x", outputs = "float y", map = "x", reduce = "a + b", identity = "0");

fn cuda_kernel_output_over_input(s: &CudaStream, c: LaunchConfig, b: &mut CudaSlice<f32>, z: &mut CudaSlice<f32>) {
    let _ = unsafe { split::launch(s, c, &*b, b, z, 1) };
}

fn cuda_kernel_output_over_output(s: &CudaStream, c: LaunchConfig, x: &CudaSlice<f32>, b: &mut CudaSlice<f32>) {
    let _ = unsafe { split::launch(s, c, x, b, b, 1) };
}

fn typed_kernel_value(s: &CudaStream, c: LaunchConfig, b: &mut CudaSlice<f32>, z: &mut CudaSlice<f32>) {
    let _ = unsafe { split::KERNEL.launch(s, c, (&*b, b, z, 1i32)) };
}

fn elementwise(s: &CudaStream, b: &mut CudaSlice<f32>, z: &mut CudaSlice<f32>) {
    let _ = ew::launch(s, &*b, b, z);
}

fn elementwise_nd(s: &CudaStream, v: &mut NdViewMut<'_, f32>, z: &mut NdViewMut<'_, f32>) {
    let _ = ew::launch_nd(s, &*v, v, z);
}

fn reduction(s: &std::sync::Arc<CudaStream>, b: &mut CudaSlice<f32>) {
    let _ = red::launch(s, &*b, b);
}

fn reduction_axes(s: &std::sync::Arc<CudaStream>, x: &NdView<'_, f32>, v: &mut NdViewMut<'_, f32>) {
    let _ = red::launch_axes(s, &*v, &[0], v);
    let _ = x;
}

fn run_time_twins(s: &std::sync::Arc<CudaStream>, k: &ElementwiseKernel, r: &Reduction, p: &ProgramKernel, b: &mut CudaSlice<f32>) {
    let _ = k.launch(s, &mut [Arg::slice(&*b), Arg::slice_mut(b)]);
    let _ = r.launch(s, &mut [TypedArg::slice(&*b), TypedArg::slice_mut(b)]);
    let _ = unsafe { p.launch(s, LaunchConfig::for_num_elems(1), &mut [Arg::slice(&*b), Arg::slice_mut(b)]) };
}

fn main() {}
