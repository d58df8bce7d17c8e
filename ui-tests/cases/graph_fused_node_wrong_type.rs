// Elementwise and reduction nodes are typed like their launchers: a wrong element type, or a
// read-only view where the kernel writes, does not compile.
use cuda_embed::{elementwise_kernel, reduction_kernel, Graph};

elementwise_kernel!(scale, inputs = "float x, scalar float a", outputs = "float y", operation = "y = a * x");
reduction_kernel!(total, inputs = "float x", outputs = "float y", map = "x", reduce = "a + b", identity = "0");

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let x = stream.alloc_zeros::<f32>(4)?;
    let y = stream.alloc_zeros::<f32>(4)?;
    let d = stream.alloc_zeros::<f64>(4)?;
    let view = y.slice(0..4);
    let mut g = Graph::new(&ctx)?;
    scale::node(&mut g, &d, 2.0, &y)?; // f64 array for float
    scale::node(&mut g, &x, 2.0, &view)?; // read-only view for the output
    total::node(&mut g, &x, &d)?; // f64 output for float
    total::node_rows(&mut g, &x, 2, &view)?; // read-only view for the output
    Ok(())
}
