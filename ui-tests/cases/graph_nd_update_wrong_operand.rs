// `update_nd` is typed like `node_nd`: a view of the wrong element type, a read-only view where
// the kernel writes, or a graph instead of its instantiation does not compile.
use cuda_embed::{elementwise_kernel, Graph, NdView, NdViewMut};

elementwise_kernel!(scale, inputs = "float x, scalar float a", outputs = "float y", operation = "y = a * x");

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
    let node = scale::node_nd(&mut g, &xv, 2.0, &yv)?;
    let mut exec = g.instantiate()?;
    scale::update_nd(&mut exec, node, &dv, 2.0, &yv)?; // f64 view for float
    scale::update_nd(&mut exec, node, &xv, 2.0, &xv)?; // read-only view for the output
    scale::update_nd(&mut g, node, &xv, 2.0, &yv)?; // the graph, not its instantiation
    Ok(())
}
