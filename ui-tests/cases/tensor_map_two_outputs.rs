// Conformance matrix, "an output aliasing another output", for tensor maps: two written maps of
// one buffer cannot exist at once (each borrows it exclusively).
use cuda_embed::{CudaStream, NdViewMut, TensorMapMut};
use std::sync::Arc;

fn two_writers(s: &Arc<CudaStream>) -> cuda_embed::Result<()> {
    let mut y = s.alloc_zeros::<f32>(1 << 20)?;
    let mut yv = NdViewMut::new(&mut y, &[1024, 1024])?;
    let a = TensorMapMut::new(&mut yv, [64, 64])?;
    let b = TensorMapMut::new(&mut yv, [32, 32])?;
    println!("{a:?} {b:?}");
    Ok(())
}

fn main() {}
