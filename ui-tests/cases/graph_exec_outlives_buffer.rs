// An instantiated graph cannot outlive a buffer one of its nodes refers to either.
use cuda_embed::{cuda_kernel, Graph, GraphExec, LaunchConfig};

cuda_kernel!(r#"extern "C" __global__ void fill(float* y, float v, int n) {}"#);

fn build(ctx: &std::sync::Arc<cuda_embed::CudaContext>) -> cuda_embed::Result<GraphExec<'static>> {
    let y = ctx.default_stream().alloc_zeros::<f32>(4)?;
    let mut g = Graph::new(ctx)?;
    fill::node(&mut g, LaunchConfig::for_num_elems(4), &y, 1.0, 4)?;
    g.instantiate()
}

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let _exec = build(&ctx)?;
    Ok(())
}
