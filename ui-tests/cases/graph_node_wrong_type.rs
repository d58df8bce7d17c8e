// A kernel node and its update are typed like the launcher: a wrong element type, a read-only
// view where the kernel writes, or a wrong scalar type do not compile.
use cuda_embed::{cuda_kernel, Graph, LaunchConfig};

cuda_kernel!(r#"extern "C" __global__ void fill(float* y, float v, int n) {}"#);

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let cfg = LaunchConfig::for_num_elems(4);
    let y = stream.alloc_zeros::<f32>(4)?;
    let ints = stream.alloc_zeros::<i32>(4)?;
    let view = y.slice(0..2);
    let mut g = Graph::new(&ctx)?;
    fill::node(&mut g, cfg, &ints, 1.0, 4)?; // i32 buffer for float*
    fill::node(&mut g, cfg, &view, 1.0, 4)?; // read-only view for float*
    let k = fill::node(&mut g, cfg, &y, 1.0, 4)?;
    let mut exec = g.instantiate()?;
    fill::update(&mut exec, &k, cfg, &y, 1.0f64, 4)?; // f64 for float
    exec.set(&k, cfg, (&y, 1.0f32))?; // an argument missing
    Ok(())
}
