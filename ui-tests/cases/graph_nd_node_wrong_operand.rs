// N-D graph nodes are typed like their launchers: a view of the wrong element type, or a
// read-only view where the kernel writes, does not compile.
use cuda_embed::{elementwise_kernel, reduction_kernel, Graph, NdView, NdViewMut};

elementwise_kernel!(scale, inputs = "float x, scalar float a", outputs = "float y", operation = "y = a * x");
reduction_kernel!(total, inputs = "float x", outputs = "float y", map = "x", reduce = "a + b", identity = "0");

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let x = stream.alloc_zeros::<f32>(4)?;
    let mut y = stream.alloc_zeros::<f32>(4)?;
    let d = stream.alloc_zeros::<f64>(4)?;
    let xv = NdView::new(&x, &[2, 2])?;
    let dv = NdView::new(&d, &[2, 2])?;
    let yv = NdViewMut::new(&mut y, &[2, 2])?;
    let mut g = Graph::new(&ctx)?;
    scale::node_nd(&mut g, &dv, 2.0, &yv)?; // f64 view for float
    scale::node_nd(&mut g, &xv, 2.0, &xv)?; // read-only view for the output
    total::node_axes(&mut g, &xv, &[1], &xv)?; // read-only view for the output
    Ok(())
}
