// A graph cannot outlive a view one of its N-D nodes refers to.
use cuda_embed::{elementwise_kernel, Graph, NdView};

elementwise_kernel!(scale, inputs = "float x, scalar float a", outputs = "float y", operation = "y = a * x");

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let y = stream.alloc_zeros::<f32>(4)?;
    let mut g = Graph::new(&ctx)?;
    {
        let x = stream.alloc_zeros::<f32>(4)?;
        let xv = NdView::new(&x, &[2, 2])?;
        scale::node_nd(&mut g, &xv, 2.0, &y)?;
    }
    let _exec = g.instantiate()?;
    Ok(())
}
