// A texture borrows the array it samples: dropping the array while the texture lives is a
// borrow error, not a dangling handle.
use cuda_embed::{CudaArray, Texture, TextureDesc};

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let array = CudaArray::<f32>::new(&ctx, (64, 64))?;
    let tex = Texture::new(&array, &TextureDesc::new())?;
    drop(array);
    println!("{:?}", tex.handle());
    Ok(())
}
