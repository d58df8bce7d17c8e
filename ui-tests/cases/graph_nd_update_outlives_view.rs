// An instantiated graph cannot outlive a view an `update_nd` pointed one of its nodes at.
use cuda_embed::{elementwise_kernel, Graph, NdView};

elementwise_kernel!(scale, inputs = "float x, scalar float a", outputs = "float y", operation = "y = a * x");

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let x = stream.alloc_zeros::<f32>(4)?;
    let y = stream.alloc_zeros::<f32>(4)?;
    let xv = NdView::new(&x, &[2, 2])?;
    let mut g = Graph::new(&ctx)?;
    let node = scale::node_nd(&mut g, &xv, 2.0, &y)?;
    let mut exec = g.instantiate()?;
    {
        let x2 = stream.alloc_zeros::<f32>(4)?;
        let xv2 = NdView::new(&x2, &[2, 2])?;
        scale::update_nd(&mut exec, node, &xv2, 2.0, &y)?;
    }
    // SAFETY: the kernel stays within its views.
    unsafe { exec.launch(&stream)? };
    Ok(())
}
