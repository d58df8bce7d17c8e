// Conformance matrix, "an output aliasing an input", for tensor maps: a written map borrows its
// buffer exclusively, so no read map (or view) of the same buffer can exist beside it.
use cuda_embed::{CudaStream, NdView, NdViewMut, TensorMap, TensorMapMut};
use std::sync::Arc;

fn read_and_write_one_buffer(s: &Arc<CudaStream>) -> cuda_embed::Result<()> {
    let mut x = s.alloc_zeros::<f32>(1 << 20)?;
    let xv = NdView::new(&x, &[1024, 1024])?;
    let src = TensorMap::new(&xv, [64, 64])?;
    let mut yv = NdViewMut::new(&mut x, &[1024, 1024])?;
    let dst = TensorMapMut::new(&mut yv, [64, 64])?;
    println!("{src:?} {dst:?}");
    Ok(())
}

fn main() {}
