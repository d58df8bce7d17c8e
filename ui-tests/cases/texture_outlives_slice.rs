// A linear texture borrows the buffer it reads: it cannot be returned past the buffer's scope.
use cuda_embed::texture::ReadMode;
use cuda_embed::{CudaStream, Texture};
use std::sync::Arc;

fn texture_of_temporary(stream: &Arc<CudaStream>) -> cuda_embed::Result<Texture<'static>> {
    let buf = stream.alloc_zeros::<f32>(1024)?;
    Texture::linear(&buf, ReadMode::ElementType)
}

fn main() {}
