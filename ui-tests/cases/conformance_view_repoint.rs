// Conformance matrix, "a view re-pointed at a smaller buffer": a writable view lends its buffer
// by value (a new view of the same memory), so safe code cannot put a smaller buffer under a
// layout that was checked against a larger one.
use cuda_embed::{CudaSlice, NdViewMut};

fn repoint(big: &mut CudaSlice<f32>, small: &mut CudaSlice<f32>) {
    let mut v = NdViewMut::new(big, &[1 << 10, 1 << 10]).unwrap();
    let mut other = small.slice_mut(..);
    std::mem::swap(v.buffer_mut(), &mut other);
    *v.buffer_mut() = small.slice_mut(..);
}

fn main() {}
