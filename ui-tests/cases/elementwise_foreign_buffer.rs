// A buffer type of the user's own implements cudarc's safe `DeviceSlice`/`DevicePtr`, whose
// `len()` nothing vouches for: the safe launcher trusts the length it reports, so it takes only
// types that implement cuda-embed's `unsafe` `DeviceBuffer` trait.
use cuda_embed::cudarc::driver::{sys::CUdeviceptr, CudaSlice, CudaStream, DevicePtr, DeviceSlice, SyncOnDrop};
use cuda_embed::elementwise_kernel;
use std::sync::Arc;

struct Lying(CudaSlice<f32>);

impl DeviceSlice<f32> for Lying {
    fn len(&self) -> usize {
        self.0.len() * 1000
    }
    fn stream(&self) -> &Arc<CudaStream> {
        self.0.stream()
    }
}

impl DevicePtr<f32> for Lying {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        self.0.device_ptr(stream)
    }
}

elementwise_kernel!(twice, inputs = "float x", outputs = "float y", operation = "y = 2 * x");

fn run(stream: &CudaStream, x: &Lying, y: &mut CudaSlice<f32>) {
    let _ = twice::launch(stream, x, y);
}

fn main() {}
