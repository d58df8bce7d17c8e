// A tiled tensor map has 1 to 5 dimensions: a map type of rank 6 does not compile.
use cuda_embed::{CudaStream, NdView, TensorMap};
use std::sync::Arc;

fn rank_six(s: &Arc<CudaStream>) -> cuda_embed::Result<()> {
    let x = s.alloc_zeros::<f32>(1 << 12)?;
    let _map = TensorMap::new(&NdView::new(&x, &[2, 2, 2, 2, 2, 128])?, [1, 1, 1, 1, 1, 16])?;
    Ok(())
}

fn main() {}
