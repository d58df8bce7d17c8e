// A kernel that sets a graph condition runs only as a node of the condition's graph: a stream
// launch has no condition to give it, and does not compile.
use cuda_embed::{cuda_kernel, Graph, LaunchConfig};

cuda_kernel!(
    r#"extern "C" __global__ void stop(int* x, cudaGraphConditionalHandle more) { cudaGraphSetConditional(more, 0); }"#
);

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let mut x = stream.alloc_zeros::<i32>(1)?;
    let mut g = Graph::new(&ctx)?;
    let more = g.condition(1)?;
    unsafe { stop::launch(&stream, LaunchConfig::for_num_elems(1), &mut x, &more)? };
    Ok(())
}
