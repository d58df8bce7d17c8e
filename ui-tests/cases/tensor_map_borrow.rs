// Conformance matrix, "a view re-pointed at a smaller buffer", for tensor maps: a map borrows its
// view's buffer for as long as it lives, so the buffer cannot be freed or replaced under it.
use cuda_embed::{CudaStream, NdView, TensorMap};
use std::sync::Arc;

fn free_under_map(s: &Arc<CudaStream>) -> cuda_embed::Result<()> {
    let mut x = s.alloc_zeros::<f32>(1 << 20)?;
    let map = TensorMap::new(&NdView::new(&x, &[1024, 1024])?, [64, 64])?;
    x = s.alloc_zeros::<f32>(16)?;
    drop(x);
    println!("{map:?}");
    Ok(())
}

fn main() {}
