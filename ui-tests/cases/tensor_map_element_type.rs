// A tensor map describes views of the element types the TMA moves; a vector type is refused at
// compile time (view it as its scalar, with one more axis).
use cuda_embed::{CudaStream, Float4, NdView, TensorMap};
use std::sync::Arc;

fn vectors(s: &Arc<CudaStream>) -> cuda_embed::Result<()> {
    let x = s.alloc_zeros::<Float4>(1024)?;
    let _map = TensorMap::new(&NdView::new(&x, &[32, 32])?, [8, 8])?;
    Ok(())
}

fn main() {}
