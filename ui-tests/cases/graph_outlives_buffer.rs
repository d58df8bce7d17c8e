// A graph cannot outlive a buffer one of its nodes refers to.
use cuda_embed::{cuda_kernel, Graph, LaunchConfig};

cuda_kernel!(r#"extern "C" __global__ void fill(float* y, float v, int n) {}"#);

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let mut g = Graph::new(&ctx)?;
    {
        let y = ctx.default_stream().alloc_zeros::<f32>(4)?;
        fill::node(&mut g, LaunchConfig::for_num_elems(4), &y, 1.0, 4)?;
    }
    let _exec = g.instantiate()?;
    Ok(())
}
