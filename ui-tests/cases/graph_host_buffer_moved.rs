// Host memory a memcpy node refers to cannot be moved, grown or freed while the graph exists.
use cuda_embed::Graph;

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let y = stream.alloc_zeros::<f32>(4)?;
    let mut host = vec![0.0f32; 4];
    let mut g = Graph::new(&ctx)?;
    g.memcpy_dtoh(&y, &mut host)?;
    host.push(1.0); // would reallocate under the copy
    let _exec = g.instantiate()?;
    Ok(())
}
