// A conditional node's body borrows its buffers for the whole graph's lifetime: a buffer made
// inside the body's closure (or anywhere that dies before the graph) does not compile.
use cuda_embed::{cuda_kernel, Graph, LaunchConfig};

cuda_kernel!(r#"extern "C" __global__ void fill(float* y, float v, int n) {}"#);

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let mut g = Graph::new(&ctx)?;
    let once = g.condition(1)?;
    g.if_then(&once, |body| {
        let y = ctx.default_stream().alloc_zeros::<f32>(4)?;
        fill::node(body, LaunchConfig::for_num_elems(4), &y, 1.0, 4)?;
        Ok(())
    })?;
    let _exec = g.instantiate()?;
    Ok(())
}
